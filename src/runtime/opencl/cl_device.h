#pragma once
/// The OpenCL devices of this machine (every platform's, in platform order) and the choice of
/// one: `--device N` counts them all from 0; $YOLOC_OPENCL_DEVICE, when set, overrides it with
/// "P:D" (device D of platform P) or "N".
#include <string>
#include <vector>

#include "runtime/opencl/cl_api.h"

namespace yoloc::runtime::opencl {

struct ClDevice {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  int platform_index = 0, device_index = 0, ordinal = 0;
  std::string platform_name, name, driver, version;

  /// "0:0 pthread-haswell-AMD EPYC (Portable Computing Language, driver 5.0, OpenCL 3.0 PoCL)".
  std::string str() const;
};

/// Every device of every platform; empty when there is none. Raises a UserError when the
/// library cannot be loaded.
std::vector<ClDevice> list_devices();

/// The device `ordinal` names, or $YOLOC_OPENCL_DEVICE when set. Raises a UserError (one
/// line, listing the devices there are) for a device that is not there.
ClDevice select_device(int ordinal);

}  // namespace yoloc::runtime::opencl
