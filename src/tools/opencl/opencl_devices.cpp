// `yoloc devices`: the OpenCL devices of every platform the ICD loader finds (device_list.h), in
// the order --device counts them; "P:D" is what $YOLOC_OPENCL_DEVICE takes.
#include <fmt/format.h>

#include "core/error.h"
#include "runtime/opencl/cl_device.h"
#include "tools/device_list.h"

namespace yoloc::tools {

namespace {

DeviceKind opencl_devices() {
  DeviceKind k{"opencl", {}, {}};
  try {
    for (const runtime::opencl::ClDevice& d : runtime::opencl::list_devices())
      k.devices.push_back({std::to_string(d.ordinal),
                           fmt::format("{} (platform {}, driver {}, {}; YOLOC_OPENCL_DEVICE={}:{})",
                                       d.name, d.platform_name, d.driver, d.version,
                                       d.platform_index, d.device_index),
                           {{"name", d.name},
                            {"platform", d.platform_name},
                            {"driver", d.driver},
                            {"version", d.version},
                            {"platform_index", d.platform_index},
                            {"device_index", d.device_index}}});
  } catch (const UserError& e) {
    k.unavailable = e.what();
  }
  return k;
}

const DeviceListerRegistration opencl_devices_registration(opencl_devices);

}  // namespace

}  // namespace yoloc::tools
