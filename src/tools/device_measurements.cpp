#include "tools/device_measurements.h"

namespace yoloc::tools {

namespace {

std::vector<std::unique_ptr<DeviceMeasurements>>& registry() {
  static std::vector<std::unique_ptr<DeviceMeasurements>> r;
  return r;
}

}  // namespace

void register_device_measurements(std::unique_ptr<DeviceMeasurements> m) {
  registry().push_back(std::move(m));
}

const DeviceMeasurements* device_measurements(runtime::Engine& engine) {
  for (const auto& m : registry())
    if (m->owns(engine)) return m.get();
  return nullptr;
}

}  // namespace yoloc::tools
