#include "runtime/opencl/cl_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace yoloc::runtime::opencl {
namespace {

ClApi load() {
  const char* env = std::getenv("YOLOC_OPENCL_LIBRARY");
  const std::string path = env && *env ? env : "libOpenCL.so.1";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    user_error("cannot load the OpenCL library {} ({}): install an OpenCL driver and its ICD "
               "loader (Debian: ocl-icd-libopencl1 and pocl-opencl-icd or the GPU vendor's), or "
               "set YOLOC_OPENCL_LIBRARY to the library",
               path, dlerror());
  ClApi api;
#define YOLOC_CL_LOAD(name)                                                                     \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name));                           \
  if (!api.name)                                                                                \
    user_error("the OpenCL library {} lacks {}: it is not an OpenCL 1.2 ICD loader", path, #name);
  YOLOC_CL_FUNCTIONS(YOLOC_CL_LOAD)
#undef YOLOC_CL_LOAD
  return api;
}

}  // namespace

const ClApi& cl_api() {
  // Loaded once; a failure is raised again by every call (the error names the fix).
  static std::once_flag once;
  static ClApi api;
  static std::string error;
  std::call_once(once, [] {
    try {
      api = load();
    } catch (const UserError& e) {
      error = e.what();
    }
  });
  if (!error.empty()) user_error("{}", error);
  return api;
}

std::string cl_status_name(cl_int s) {
  switch (s) {
#define YOLOC_CL_CASE(c) \
  case c:                \
    return #c;
    YOLOC_CL_CASE(CL_DEVICE_NOT_FOUND)
    YOLOC_CL_CASE(CL_DEVICE_NOT_AVAILABLE)
    YOLOC_CL_CASE(CL_COMPILER_NOT_AVAILABLE)
    YOLOC_CL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    YOLOC_CL_CASE(CL_OUT_OF_RESOURCES)
    YOLOC_CL_CASE(CL_OUT_OF_HOST_MEMORY)
    YOLOC_CL_CASE(CL_BUILD_PROGRAM_FAILURE)
    YOLOC_CL_CASE(CL_INVALID_VALUE)
    YOLOC_CL_CASE(CL_INVALID_PLATFORM)
    YOLOC_CL_CASE(CL_INVALID_DEVICE)
    YOLOC_CL_CASE(CL_INVALID_BINARY)
    YOLOC_CL_CASE(CL_INVALID_BUILD_OPTIONS)
    YOLOC_CL_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    YOLOC_CL_CASE(CL_INVALID_KERNEL_NAME)
    YOLOC_CL_CASE(CL_INVALID_KERNEL_ARGS)
    YOLOC_CL_CASE(CL_INVALID_WORK_GROUP_SIZE)
    YOLOC_CL_CASE(CL_INVALID_WORK_ITEM_SIZE)
    YOLOC_CL_CASE(CL_INVALID_BUFFER_SIZE)
    YOLOC_CL_CASE(CL_INVALID_ARG_SIZE)
    YOLOC_CL_CASE(CL_INVALID_ARG_VALUE)
    YOLOC_CL_CASE(CL_INVALID_MEM_OBJECT)
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
#undef YOLOC_CL_CASE
    default:
      return "CL_ERROR";
  }
}

void cl_check(cl_int status, const std::string& what) {
  if (status != CL_SUCCESS)
    user_error("{}: OpenCL error {} ({})", what, cl_status_name(status), status);
}

}  // namespace yoloc::runtime::opencl
