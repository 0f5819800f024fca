#pragma once
/// What `yoloc devices` lists: the devices of each kind this build can run artifacts on. The CPU
/// is always there; a GPU kind registers its lister from a folder of its own (src/tools/cuda/,
/// src/tools/opencl/) that CMake builds with the runtime's support for it.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace yoloc::tools {

/// The devices of one kind: each as the index `--device` takes and a one-line description; or,
/// where the kind cannot be asked (no driver, no library), why.
struct DeviceKind {
  std::string target;  ///< the `--target` its artifacts are compiled for
  struct Device {
    std::string id;  ///< what --device takes; empty where there is one (the CPU)
    std::string description;
    nlohmann::json facts;  ///< for --json
  };
  std::vector<Device> devices;
  std::string unavailable;  ///< non-empty: the kind could not be asked, and why
};

using DeviceLister = std::function<DeviceKind()>;

/// The CPU's model name ("AMD EPYC 7B13"), from /proc/cpuinfo; "unknown CPU" elsewhere.
std::string cpu_model();

/// Registers the lister of one device kind (listed in registration order after the CPU).
void register_device_lister(DeviceLister lister);
const std::vector<DeviceLister>& device_listers();

/// A static object of this type in a device's folder registers its lister.
struct DeviceListerRegistration {
  explicit DeviceListerRegistration(DeviceLister lister) {
    register_device_lister(std::move(lister));
  }
};

}  // namespace yoloc::tools
