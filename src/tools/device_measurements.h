#pragma once
/// What `yoloc bench` and `yoloc profile` measure of an engine beyond the calls every engine has
/// (run, detect, kernels, profile_kernels): a device's own timings, such as a GPU's network
/// alone as one graph, end to end from a pinned frame, on concurrent lanes, or the latency each
/// kernel adds inside the graph. One per engine kind, in a folder of its own (src/tools/cuda/)
/// that CMake builds with the runtime's support for that device and that registers itself
/// once; the commands ask the registry, never an engine's kind.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/engine.h"

namespace yoloc::tools {

/// The `yoloc bench` options the device measurements take.
struct DeviceBench {
  int64_t batch = 1;
  int warmup = 10;
  int iters = 100;
  int streams = 2;            ///< lanes of the concurrent and pipelined timings
  bool network_only = false;  ///< no host-tensor or end-to-end timings
  std::string image;          ///< the end-to-end frame; empty: synthetic_frame()
};

/// `yoloc profile --in-graph`: what each kernel adds to the network's latency inside its graph.
struct InGraphProfile {
  std::vector<double> added_ms;  ///< per kernel, program order
  nlohmann::json totals;         ///< the graph's own figures
};

class DeviceMeasurements {
 public:
  virtual ~DeviceMeasurements() = default;
  /// Whether `engine` is of its kind (the calls below then take it).
  virtual bool owns(runtime::Engine& engine) const = 0;
  /// Whether it times the network alone, so that --network-only may skip the host-tensor run.
  virtual bool times_network_alone() const = 0;
  /// Runs its timings after bench's run() timing, prints them and adds them to `figures`.
  virtual void bench(runtime::Engine& engine, const DeviceBench& options,
                     nlohmann::json& figures) const = 0;
  /// profile --in-graph over `iters` samples (prints the graph's figures).
  virtual InGraphProfile profile_in_graph(runtime::Engine& engine, int iters) const = 0;
};

/// Registers the measurements of one engine kind.
void register_device_measurements(std::unique_ptr<DeviceMeasurements> m);
/// The measurements that own `engine`, or nullptr (a CPU engine: bench and profile need none).
const DeviceMeasurements* device_measurements(runtime::Engine& engine);

/// A static object of this type in a device's folder registers its measurements.
template <class T>
struct DeviceMeasurementsRegistration {
  DeviceMeasurementsRegistration() { register_device_measurements(std::make_unique<T>()); }
};

}  // namespace yoloc::tools
