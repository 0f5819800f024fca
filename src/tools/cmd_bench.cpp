// yoloc bench MODEL [--batch N] [--iters N] [--warmup N] [--threads N] [--json FILE]
// Latency of the network on random inputs: MODEL is a .ycm artifact, or an ONNX model that is
// compiled for this machine first (into a temporary artifact).
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>

#include "artifact/artifact_reader.h"
#include "runtime/executor.h"
#include "tools/commands.h"
#include "tools/compile_model.h"

namespace yoloc::tools {

namespace {

namespace fs = std::filesystem;

struct BenchOptions {
  std::string model;
  int batch = 0;  ///< 0: the artifact's, or 1 for an ONNX model
  int iters = 100;
  int warmup = 10;
  int threads = 0;
  std::string json;
};

/// The q-quantile (0..1) of sorted samples, linearly interpolated.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
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

void run_bench(const BenchOptions& o) {
  const PreparedArtifact prepared = prepare_artifact(o.model, o.batch);
  const std::string& artifact_path = prepared.path;
  const double compile_s = prepared.compile_seconds;
  auto art = std::make_shared<const artifact::Artifact>(artifact::Artifact::open(artifact_path));
  const artifact::Manifest& m = art->manifest();
  if (m.inputs.empty()) user_error("'{}' has no inputs to feed", o.model);
  const int64_t batch = m.inputs[0].shape.empty() ? 1 : m.inputs[0].shape[0];
  if (o.batch > 0 && o.batch != batch)
    user_error("--batch {}: the artifact '{}' was compiled for batch {}; recompile it with "
               "--batch {}", o.batch, o.model, batch, o.batch);
  const int threads =
      o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  runtime::Executor exec(art, threads);

  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(0.f, 1.f);
  std::vector<Tensor> inputs;
  for (const artifact::TensorSpec& spec : m.inputs) {
    Tensor t(dtype_from_name(spec.dtype), spec.shape);
    if (t.dtype() != DType::kFloat32)
      user_error("bench feeds float32 inputs; input '{}' is {}", spec.name, spec.dtype);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    inputs.push_back(std::move(t));
  }
  for (int i = 0; i < o.warmup; ++i) exec.run(inputs);
  std::vector<double> ms;
  for (int i = 0; i < o.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    exec.run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double median = quantile(ms, 0.5);
  nlohmann::json j = {{"model", o.model},
                      {"target", m.target},
                      {"precision", m.precision},
                      {"batch", batch},
                      {"threads", threads},
                      {"iters", o.iters},
                      {"warmup", o.warmup},
                      {"median_ms", median},
                      {"mean_ms", std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size())},
                      {"min_ms", ms.front()},
                      {"p90_ms", quantile(ms, 0.9)},
                      {"p99_ms", quantile(ms, 0.99)},
                      {"max_ms", ms.back()},
                      {"throughput_ips", 1000.0 * static_cast<double>(batch) / median},
                      {"peak_rss_mb", static_cast<double>(ru.ru_maxrss) / 1024.0},
                      {"cpu", cpu_model()},
                      {"tool_version", YOLOC_VERSION}};
  if (compile_s > 0) j["compile_s"] = compile_s;
  fmt::print("{}: batch {}, {} threads, {} iterations\n", o.model, batch, threads, o.iters);
  fmt::print("  median {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  min {:.3f} ms\n", median,
             quantile(ms, 0.9), quantile(ms, 0.99), ms.front());
  fmt::print("  {:.1f} images/s, peak RSS {:.1f} MB\n", 1000.0 * static_cast<double>(batch) / median,
             static_cast<double>(ru.ru_maxrss) / 1024.0);
  if (!o.json.empty()) write_json_file(o.json, j, "--json");
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
  c->add_option("--json", o->json, "also write the figures to FILE");
  c->callback([o] { run_bench(*o); });
}

}  // namespace yoloc::tools
