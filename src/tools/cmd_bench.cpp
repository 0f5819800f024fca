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
#include "tools/artifact_options.h"
#include "tools/bench_timing.h"
#include "tools/commands.h"
#include "tools/device_list.h"
#include "tools/device_measurements.h"
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
  if (engine->threads() > 0) j["threads"] = engine->threads();
  const DeviceMeasurements* device = device_measurements(*engine);
  fmt::print("{}: batch {}, {}, {} iterations\n", o.model, batch, engine->device(), o.iters);
  // On the CPU this is the network's time; a CUDA artifact also copies the tensors to and from
  // the host (at batch 128, 600 MB of input a run), which --network-only leaves out.
  if (!(o.network_only && device && device->times_network_alone())) {
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
               s.p90, s.p99, s.min, device ? "host tensors in and out" : "network");
    fmt::print("  {:.1f} images/s, peak RSS {:.1f} MB\n", ips,
               static_cast<double>(ru.ru_maxrss) / 1024.0);
  } else {
    engine->run(inputs);  // once, untimed: the network below then replays on these inputs
  }
  if (device)
    device->bench(*engine, {batch, o.warmup, o.iters, o.streams, o.network_only, o.image}, j);
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
