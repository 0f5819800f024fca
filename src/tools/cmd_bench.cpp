// yoloc bench MODEL [--batch N] [--iters N] [--warmup N] [--threads N] [--streams N] [--network-only]
//             [--json FILE]
// Latency of the network on random inputs: MODEL is a .ycm artifact, or an ONNX model that is
// compiled for this machine first (into a temporary artifact).
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "artifact/artifact_reader.h"
#include "core/error.h"
#include "yoloc/image.h"
#include "runtime/engine.h"
#include "runtime/executor.h"
#ifdef YOLOC_HAVE_CUDA
#include "runtime/cuda/cuda_executor.h"
#endif
#include "tools/artifact_options.h"
#include "tools/commands.h"
#include "tools/prepared_artifact.h"
#include "tools/random_inputs.h"

namespace yoloc::tools {

namespace {

namespace fs = std::filesystem;

struct BenchOptions {
  std::string model;
  int batch = 0;  ///< 0: the artifact's, or 1 for an ONNX model
  int iters = 100;
  int warmup = 10;
  int threads = 0;
  int device = 0;
  std::string image;  ///< the frame of the end-to-end timing (GPU detection); default synthetic
  int streams = 2;    ///< CUDA: lanes (streams) of the concurrent and pipelined timings
  bool network_only = false;  ///< CUDA: no host-tensor or end-to-end timings
  std::string json;
  ArtifactLoadOptions load;
  ModelOptions compile;  ///< ONNX models: --family, --imgsz
};

struct Stats {
  double median = 0, p90 = 0, p99 = 0, min = 0, max = 0, mean = 0;
};

/// The q-quantile (0..1) of sorted samples, linearly interpolated.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  Stats s;
  s.median = quantile(ms, 0.5);
  s.p90 = quantile(ms, 0.9);
  s.p99 = quantile(ms, 0.99);
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  return s;
}

/// Wall-clock milliseconds of `iters` calls of fn after `warmup` calls.
template <class Fn>
std::vector<double> time_calls(int warmup, int iters, Fn&& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  return ms;
}

/// A 1280 x 720 frame of smooth gradients, when no --image is given.
detect::Image synthetic_frame() {
  detect::Image img;
  img.width = 1280;
  img.height = 720;
  img.bgr.resize(static_cast<size_t>(img.width) * img.height * 3);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      for (int c = 0; c < 3; ++c)
        img.bgr[(static_cast<size_t>(y) * img.width + x) * 3 + c] =
            static_cast<uint8_t>((x * (c + 1) + y * (3 - c)) / 8 % 256);
  return img;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(std::min(colon + 2, line.size()));
    }
  }
  return "unknown";
}

#ifdef YOLOC_HAVE_CUDA
/// Detections through submit() / wait() with o.streams frames in flight: images per second over
/// o.iters frames, after checking that they equal detect()'s on the same frame.
void bench_pipelined(runtime::Engine& engine, const detect::Image& frame, const BenchOptions& o,
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
                              const BenchOptions& o, nlohmann::json& j) {
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
#endif

/// The compile of an ONNX model: --family, --imgsz and --batch.
ModelOptions on_the_fly(const BenchOptions& o) {
  ModelOptions m = o.compile;
  m.batch = o.batch;
  return m;
}

void run_bench(const BenchOptions& o) {
  keep_stdout_for_json(o.json);
  const PreparedArtifact prepared = prepare_artifact(o.model, on_the_fly(o));
  const std::string& artifact_path = prepared.path;
  const double compile_s = prepared.compile_seconds;
  auto art = open_trusted_artifact(artifact_path, o.load, prepared.temp_dir.empty());
  const artifact::Manifest& m = art->manifest();
  if (m.inputs.empty()) user_error("'{}' has no inputs to feed", o.model);
  const int64_t batch = m.inputs[0].shape.empty() ? 1 : m.inputs[0].shape[0];
  if (o.batch > 0 && o.batch != batch)
    user_error("--batch {}: the artifact '{}' was compiled for batch {}; recompile it with "
               "--batch {}", o.batch, o.model, batch, o.batch);
  std::shared_ptr<runtime::Engine> engine =
      runtime::Engine::open(art, engine_options(o.load, o.threads, o.device, o.streams));

  const std::vector<Tensor> inputs = random_inputs(m, "bench");
  nlohmann::json j = {{"model", o.model},       {"target", m.target},
                      {"precision", m.precision}, {"device", engine->device()},
                      {"batch", batch},           {"iters", o.iters},
                      {"warmup", o.warmup},       {"cpu", cpu_model()},
                      {"tool_version", YOLOC_VERSION}};
  if (engine->cpu()) j["threads"] = engine->cpu()->threads();
  fmt::print("{}: batch {}, {}, {} iterations\n", o.model, batch, engine->device(), o.iters);
  // On the CPU this is the network's time; a CUDA artifact also copies the tensors to and from
  // the host (at batch 128, 600 MB of input a run), which --network-only leaves out.
  if (!(o.network_only && engine->cuda())) {
    const Stats s = stats(time_calls(o.warmup, o.iters, [&] { engine->run(inputs); }));
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const double ips = 1000.0 * static_cast<double>(batch) / s.median;
    j.update({{"median_ms", s.median},
              {"mean_ms", s.mean},
              {"min_ms", s.min},
              {"p90_ms", s.p90},
              {"p99_ms", s.p99},
              {"max_ms", s.max},
              {"throughput_ips", ips},
              {"peak_rss_mb", static_cast<double>(ru.ru_maxrss) / 1024.0}});
    fmt::print("  median {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  min {:.3f} ms  ({})\n", s.median,
               s.p90, s.p99, s.min, engine->cuda() ? "host tensors in and out" : "network");
    fmt::print("  {:.1f} images/s, peak RSS {:.1f} MB\n", ips,
               static_cast<double>(ru.ru_maxrss) / 1024.0);
  } else {
    engine->run(inputs);  // once, untimed: the network below then replays on these inputs
  }
#ifdef YOLOC_HAVE_CUDA
  if (runtime::cuda::CudaExecutor* cuda = engine->cuda()) {
    const Stats net = stats(cuda->time_network(o.warmup, o.iters));
    const double net_ips = 1000.0 * static_cast<double>(batch) / net.median;
    j["network_median_ms"] = net.median;
    j["network_p99_ms"] = net.p99;
    j["network_min_ms"] = net.min;
    j["network_throughput_ips"] = net_ips;
    j["gpu"] = cuda->device().name;
    j["arch"] = cuda->device().arch();
    j["kernels"] = cuda->program().launches.size();
    j["programmatic_launch"] = cuda->programmatic_launch();
    j["graph_streams"] = cuda->network_streams();
    j["lanes"] = cuda->program().lanes;
    j["arena_bytes"] = cuda->program().arena_bytes;
    const int lanes = cuda->program().lanes;
    fmt::print(
        "  network alone (one CUDA graph over {} stream{}{}{}, device memory): median "
        "{:.3f} ms  p99 {:.3f} ms  {:.1f} images/s\n",
        cuda->network_streams(), cuda->network_streams() > 1 ? "s" : "",
        lanes > 1 ? fmt::format(", {} lanes", lanes) : "",
        cuda->programmatic_launch() ? ", programmatic dependent launch" : "", net.median, net.p99,
        net_ips);
    // Throughput as the PyTorch peer counts it: o.iters runs back to back between two events
    // (the host's launch cost overlapping the GPU's work), the median of 5 such timings.
    const Stats queued = stats(cuda->time_network_queued(5, o.iters));
    const double queued_ips = 1000.0 * static_cast<double>(batch) / queued.median;
    j["network_queued_ms"] = queued.median;
    j["network_queued_ips"] = queued_ips;
    fmt::print("  network alone, {} runs back to back: {:.3f} ms a run  {:.1f} images/s\n", o.iters,
               queued.median, queued_ips);
    if (engine->detects() && !o.network_only) {
      const detect::Image frame = o.image.empty() ? synthetic_frame() : detect::read_image(o.image);
      const std::vector<detect::Image> frames(static_cast<size_t>(batch), frame);
      const Stats e2e = stats(time_calls(o.warmup, o.iters, [&] {
        cuda->detect(frames, 0.25f, 0.45f, 300);
      }));
      // The frame already in the runtime's pinned buffer (a decoder writing there): no host copy.
      std::vector<std::pair<int, int>> sizes;
      for (int b = 0; b < batch; ++b) {
        size_t pitch = 0;
        uint8_t* dst = cuda->frame_buffer(b, frame.width, frame.height, &pitch);
        for (int y = 0; y < frame.height; ++y)
          std::memcpy(dst + pitch * static_cast<size_t>(y), frame.pixel(0, y),
                      static_cast<size_t>(frame.width) * 3);
        sizes.emplace_back(frame.width, frame.height);
      }
      const Stats pinned = stats(time_calls(o.warmup, o.iters, [&] {
        cuda->detect_written(sizes, 0.25f, 0.45f, 300);
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
      if (batch == 1) bench_pipelined(*engine, frame, o, j);
    }
    bench_concurrent_network(*cuda, batch, o, j);
    j["gpu_memory_mb"] = static_cast<double>(cuda->device_bytes()) / 1e6;
    fmt::print("  GPU memory: {:.1f} MB (arena, weights, detection buffers)\n",
               static_cast<double>(cuda->device_bytes()) / 1e6);
  }
#endif
  if (compile_s > 0) j["compile_s"] = compile_s;
  if (!o.json.empty()) write_json(o.json, j, "--json");
}

}  // namespace

void add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* c = app.add_subcommand(
      "bench", "Measure a model's network latency (an ONNX model is compiled for this CPU first)");
  c->add_option("model", o->model, "compiled .ycm artifact, or ONNX model")->required();
  c->add_option("--batch", o->batch, "images per run (ONNX models; artifacts keep their own)")
      ->check(CLI::PositiveNumber);
  c->add_option("--iters", o->iters, "timed runs")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--warmup", o->warmup, "untimed runs first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--threads", o->threads, "worker threads (default: all hardware threads)")
      ->check(CLI::PositiveNumber);
  c->add_option("--device", o->device, "GPU of a CUDA artifact")->check(CLI::NonNegativeNumber);
  c->add_option("--image", o->image,
                "frame of the end-to-end timing of a CUDA detector (default: a synthetic 1280x720)");
  c->add_option("--streams", o->streams,
                "CUDA: streams (lanes) of the concurrent-network and pipelined end-to-end timings")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_flag("--network-only", o->network_only,
              "CUDA: time the network alone (and on several streams): no host-tensor or "
              "end-to-end timings, which take minutes at large batches");
  add_artifact_load_options(*c, o->load);
  add_on_the_fly_options(*c, o->compile);
  c->add_option("--json", o->json, "also write the figures to FILE, or to stdout with '-' (the text then goes to stderr)");
  c->callback([o] { run_bench(*o); });
}

}  // namespace yoloc::tools
