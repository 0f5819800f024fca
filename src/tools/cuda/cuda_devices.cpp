// `yoloc devices`: the CUDA devices the driver reports (device_list.h), each with its compute
// capability (the --arch its kernels are built for), multiprocessors and memory.
#include <fmt/format.h>

#include "core/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "tools/device_list.h"

namespace yoloc::tools {

namespace {

DeviceKind cuda_devices() {
  DeviceKind k{"cuda", {}, {}};
  try {
    runtime::cuda::driver();
  } catch (const UserError& e) {
    k.unavailable = e.what();
    return k;
  }
  const int count = runtime::cuda::device_count_or_zero();
  for (int i = 0; i < count; ++i) {
    try {
      const runtime::cuda::Context context(i);
      const runtime::cuda::DeviceInfo& d = context.info();
      k.devices.push_back(
          {std::to_string(i),
           fmt::format("{} ({}, {} multiprocessors, {:.1f} GiB)", d.name, d.arch(),
                       d.multiprocessors, static_cast<double>(d.total_memory) / (1 << 30)),
           {{"name", d.name},
            {"arch", d.arch()},
            {"multiprocessors", d.multiprocessors},
            {"memory_bytes", d.total_memory}}});
    } catch (const UserError& e) {
      k.devices.push_back({std::to_string(i), fmt::format("cannot be opened: {}", e.what()), {}});
    }
  }
  return k;
}

const DeviceListerRegistration cuda_devices_registration(cuda_devices);

}  // namespace

}  // namespace yoloc::tools
