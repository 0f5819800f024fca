// The driver loader without a GPU: a missing libcuda is a UserError that says so (at first use,
// not at link or load time), the versioned symbols yoloc uses all exist in the toolkit's libcuda,
// and a failing driver call names the call and the CUDA error.
#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"

namespace yoloc::runtime::cuda {
namespace {

bool libcuda_loadable() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(CudaDriver, MissingLibraryIsUserError) {
  try {
    load_driver_api("libyoloc-no-such-driver.so.1");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no CUDA driver (libyoloc-no-such-driver.so.1) found"), std::string::npos)
        << what;
  }
}

TEST(CudaDriver, NoDriverOnThisMachine) {
  if (libcuda_loadable()) GTEST_SKIP() << "this machine has a CUDA driver";
  try {
    driver();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA driver (libcuda.so.1) found"), std::string::npos)
        << e.what();
  }
  // The same error again (not a crash, not an internal error), and from the wrappers.
  EXPECT_THROW(driver(), UserError);
  EXPECT_THROW(Context(0), UserError);
  EXPECT_THROW(DeviceBuffer(16), UserError);
  EXPECT_EQ(device_count_or_zero(), 0);
}

TEST(CudaDriver, StubResolvesEverySymbolAndCallsFailClearly) {
  const std::string stub = YOLOC_CUDA_STUB_LIBCUDA;
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no driver stub at " << stub;
  // The toolkit's link stub exports the driver API of the toolkit's version: every function of
  // the table, under the versioned name cuda.h maps it to, must be found.
  const auto api = load_driver_api(stub);
  ASSERT_NE(api->cuMemAlloc, nullptr);
  ASSERT_NE(api->cuGraphInstantiate, nullptr);
  // Its functions all fail with CUDA_ERROR_STUB_LIBRARY.
  const CUresult r = api->cuInit(0);
  ASSERT_NE(r, CUDA_SUCCESS);
  try {
    check(api.get(), r, "cuInit(0)");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuInit(0) failed"), std::string::npos) << what;
    EXPECT_NE(what.find("(" + std::to_string(static_cast<int>(r)) + ")"), std::string::npos)
        << what;
  }
}

TEST(CudaDriver, CheckWithoutErrorStrings) {
  try {
    check(nullptr, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(&p, n)");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cuMemAlloc(&p, n) failed: CUDA error (2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(check(nullptr, CUDA_SUCCESS, "cuInit"));
}

}  // namespace
}  // namespace yoloc::runtime::cuda
