// What `yoloc bench` and `yoloc profile` measure of a CUDA engine beyond its run() and kernels
// (device_measurements.h): the network alone as one CUDA graph (from an idle stream and back to
// back), end to end from a frame in host memory and from one written into the runtime's pinned
// buffer, pipelined submit/wait, the network on concurrent lanes, and the latency each kernel
// adds inside the graph (profile --in-graph). Built with the runtime's CUDA support only.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "runtime/cuda/cuda_engine.h"
#include "runtime/cuda/cuda_program.h"
#include "tools/bench_timing.h"
#include "tools/device_measurements.h"

namespace yoloc::tools {

namespace {

/// Detections through submit() / wait() with o.streams frames in flight: images per second over
/// o.iters frames, after checking that they equal detect()'s on the same frame.
void bench_pipelined(runtime::Engine& engine, const detect::Image& frame, const DeviceBench& o,
                     nlohmann::json& j) {
  const std::vector<detect::Detection> want = engine.detect(frame, 0.25f, 0.45f, 300);
  for (int i = 0; i < o.streams; ++i) {  // every lane once
    const std::vector<detect::Detection> got =
        engine.wait(engine.submit(frame, 0.25f, 0.45f, 300));
    const bool same = got.size() == want.size() &&
                      std::equal(got.begin(), got.end(), want.begin(), [](const auto& a, const auto& b) {
                        return a.class_id == b.class_id && a.score == b.score &&
                               a.box.x1 == b.box.x1 && a.box.y1 == b.box.y1 &&
                               a.box.x2 == b.box.x2 && a.box.y2 == b.box.y2;
                      });
    if (!same)
      user_error("pipelined detection (lane {}) gave {} detections that differ from detect()'s "
                 "{}; please report this",
                 i, got.size(), want.size());
  }
  const auto run = [&](int frames) {
    std::vector<uint64_t> tickets;
    size_t first = 0;
    for (int i = 0; i < frames; ++i) {
      tickets.push_back(engine.submit(frame, 0.25f, 0.45f, 300));
      if (tickets.size() - first >= static_cast<size_t>(o.streams)) engine.wait(tickets[first++]);
    }
    while (first < tickets.size()) engine.wait(tickets[first++]);
  };
  run(o.warmup);
  const auto t0 = std::chrono::steady_clock::now();
  run(o.iters);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ips = o.iters / s;
  j["e2e_pipelined_ips"] = ips;
  j["e2e_pipelined_in_flight"] = o.streams;
  fmt::print("  end to end, pipelined ({} frames in flight, submit/wait): {:.1f} images/s "
             "({:.3f} ms per frame; detections equal detect()'s)\n",
             o.streams, ips, 1000.0 / ips);
}

/// The network alone on o.streams lanes at once (each its own stream and arena): images per
/// second of rounds that replay every lane's graph, the median of 5 timings of o.iters rounds.
void bench_concurrent_network(runtime::cuda::CudaExecutor& base, int64_t batch,
                              const DeviceBench& o, nlohmann::json& j) {
  if (o.streams < 2) return;
  std::vector<std::unique_ptr<runtime::cuda::CudaExecutor>> own;
  std::vector<runtime::cuda::CudaExecutor*> lanes = {&base};
  for (int i = 1; i < o.streams; ++i) {
    own.push_back(base.make_lane());
    lanes.push_back(own.back().get());
  }
  const auto rounds = [&](int n) {
    for (int r = 0; r < n; ++r)
      for (auto* l : lanes) l->launch_network();
    for (auto* l : lanes) l->synchronize();
  };
  rounds(o.warmup);
  std::vector<double> ips;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    rounds(o.iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ips.push_back(static_cast<double>(o.iters) * o.streams * static_cast<double>(batch) / s);
  }
  const double median = stats(ips).median;
  j["network_streams"] = o.streams;
  j["network_streams_throughput_ips"] = median;
  fmt::print("  network alone on {} streams at once: {:.1f} images/s\n", o.streams, median);
}

void bench_cuda(runtime::Engine& engine, runtime::cuda::CudaExecutor& cuda, const DeviceBench& o,
                nlohmann::json& j) {
  const int64_t batch = o.batch;
  const Stats net = stats(cuda.time_network(o.warmup, o.iters));
  const double net_ips = 1000.0 * static_cast<double>(batch) / net.median;
  j["network_median_ms"] = net.median;
  j["network_p99_ms"] = net.p99;
  j["network_min_ms"] = net.min;
  j["network_throughput_ips"] = net_ips;
  j["gpu"] = cuda.device().name;
  j["arch"] = cuda.device().arch();
  j["kernels"] = cuda.program().launches.size();
  j["programmatic_launch"] = cuda.programmatic_launch();
  j["graph_streams"] = cuda.network_streams();
  j["lanes"] = cuda.program().lanes;
  j["arena_bytes"] = cuda.program().arena_bytes;
  const int lanes = cuda.program().lanes;
  fmt::print(
      "  network alone (one CUDA graph over {} stream{}{}{}, device memory): median "
      "{:.3f} ms  p99 {:.3f} ms  {:.1f} images/s\n",
      cuda.network_streams(), cuda.network_streams() > 1 ? "s" : "",
      lanes > 1 ? fmt::format(", {} lanes", lanes) : "",
      cuda.programmatic_launch() ? ", programmatic dependent launch" : "", net.median, net.p99,
      net_ips);
  // Throughput as the PyTorch peer counts it: o.iters runs back to back between two events
  // (the host's launch cost overlapping the GPU's work), the median of 5 such timings.
  const Stats queued = stats(cuda.time_network_queued(5, o.iters));
  const double queued_ips = 1000.0 * static_cast<double>(batch) / queued.median;
  j["network_queued_ms"] = queued.median;
  j["network_queued_ips"] = queued_ips;
  fmt::print("  network alone, {} runs back to back: {:.3f} ms a run  {:.1f} images/s\n", o.iters,
             queued.median, queued_ips);
  if (engine.detects() && !o.network_only) {
    const detect::Image frame = o.image.empty() ? synthetic_frame() : detect::read_image(o.image);
    const std::vector<detect::Image> frames(static_cast<size_t>(batch), frame);
    const Stats e2e = stats(time_calls(o.warmup, o.iters, [&] {
      cuda.detect(frames, 0.25f, 0.45f, 300);
    }));
    // The frame already in the runtime's pinned buffer (a decoder writing there): no host copy.
    std::vector<std::pair<int, int>> sizes;
    for (int b = 0; b < batch; ++b) {
      size_t pitch = 0;
      uint8_t* dst = cuda.frame_buffer(b, frame.width, frame.height, &pitch);
      for (int y = 0; y < frame.height; ++y)
        std::memcpy(dst + pitch * static_cast<size_t>(y), frame.pixel(0, y),
                    static_cast<size_t>(frame.width) * 3);
      sizes.emplace_back(frame.width, frame.height);
    }
    const Stats pinned = stats(time_calls(o.warmup, o.iters, [&] {
      cuda.detect_written(sizes, 0.25f, 0.45f, 300);
    }));
    j["e2e_median_ms"] = e2e.median;
    j["e2e_p99_ms"] = e2e.p99;
    j["e2e_pinned_median_ms"] = pinned.median;
    j["e2e_pinned_p99_ms"] = pinned.p99;
    j["e2e_frame"] = fmt::format("{}x{}", frame.width, frame.height);
    fmt::print("  end to end ({}x{} uint8 frame{} in host memory -> detections): median {:.3f} ms"
               "  p99 {:.3f} ms\n",
               frame.width, frame.height, batch > 1 ? "s" : "", e2e.median, e2e.p99);
    fmt::print("  end to end, frame written into the runtime's pinned buffer: median {:.3f} ms  "
               "p99 {:.3f} ms\n",
               pinned.median, pinned.p99);
    if (batch == 1) bench_pipelined(engine, frame, o, j);
  }
  bench_concurrent_network(cuda, batch, o, j);
  j["gpu_memory_mb"] = static_cast<double>(cuda.device_bytes()) / 1e6;
  fmt::print("  GPU memory: {:.1f} MB (arena, weights, detection buffers)\n",
             static_cast<double>(cuda.device_bytes()) / 1e6);
}

class CudaMeasurements final : public DeviceMeasurements {
 public:
  bool owns(runtime::Engine& engine) const override {
    return dynamic_cast<runtime::cuda::CudaEngine*>(&engine) != nullptr;
  }
  bool times_network_alone() const override { return true; }
  void bench(runtime::Engine& engine, const DeviceBench& options,
             nlohmann::json& figures) const override {
    bench_cuda(engine, executor(engine), options, figures);
  }
  InGraphProfile profile_in_graph(runtime::Engine& engine, int iters) const override {
    runtime::cuda::CudaExecutor& cuda = executor(engine);
    const int replays = 20;
    std::vector<double> prefix;
    for (const std::vector<double>& s : cuda.profile_prefixes(iters, replays))
      prefix.push_back(median(s));
    InGraphProfile p;
    for (size_t i = 0; i < prefix.size(); ++i)
      p.added_ms.push_back(prefix[i] - (i > 0 ? prefix[i - 1] : 0.0));
    p.totals = {{"network_queued_ms", median(cuda.time_network_queued(iters, replays))},
                {"network_from_idle_ms", median(cuda.time_network(10, iters * 5))},
                {"last_prefix_ms", prefix.empty() ? 0.0 : prefix.back()}};
    fmt::print(
        "network graph: {:.4f} ms per replay back to back, {:.4f} ms each from an idle "
        "stream (the host's launch included)\n",
        p.totals["network_queued_ms"].get<double>(), p.totals["network_from_idle_ms"].get<double>());
    return p;
  }

 private:
  static runtime::cuda::CudaExecutor& executor(runtime::Engine& engine) {
    return dynamic_cast<runtime::cuda::CudaEngine&>(engine).executor();
  }
};

const DeviceMeasurementsRegistration<CudaMeasurements> cuda_measurements_registration;

}  // namespace

}  // namespace yoloc::tools
