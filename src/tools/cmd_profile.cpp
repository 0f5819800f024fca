// yoloc profile MODEL [--iters N] [--threads N] [--batch N] [--in-graph] [--json FILE]: the time
// of every kernel of a compiled model, slowest first, with its template, workload and GFLOP/s;
// with --in-graph (CUDA) also what each kernel adds to the network's latency inside its CUDA
// graph, ordered by that.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "artifact/artifact_reader.h"
#include "runtime/engine.h"
#include "tools/artifact_options.h"
#include "tools/bench_timing.h"
#include "tools/commands.h"
#include "tools/device_measurements.h"
#include "tools/prepared_artifact.h"
#include "tools/random_inputs.h"
#include "core/error.h"

namespace yoloc::tools {

namespace {

struct ProfileOptions {
  std::string model;
  int batch = 0;
  int iters = 20;
  int threads = 0;
  int device = 0;
  int top = 25;
  bool in_graph = false;
  std::string json;
  ArtifactLoadOptions load;
  ModelOptions compile;  ///< ONNX models: --family, --imgsz
};

std::string task_str(const nlohmann::json& task, const char* key) {
  auto it = task.find(key);
  return it != task.end() && it->is_string() ? it->get<std::string>() : "";
}

/// The compile of an ONNX model: --family, --imgsz and --batch.
ModelOptions on_the_fly(const ProfileOptions& o) {
  ModelOptions m = o.compile;
  m.batch = o.batch;
  return m;
}

void run_profile(const ProfileOptions& o) {
  keep_stdout_for_json(o.json);
  const PreparedArtifact prepared = prepare_artifact(o.model, on_the_fly(o));
  auto art = open_trusted_artifact(prepared.path, o.load, prepared.temp_dir.empty());
  std::unique_ptr<runtime::Engine> engine =
      runtime::Engine::open(art, engine_options(o.load, o.threads, o.device));
  const DeviceMeasurements* device = device_measurements(*engine);
  if (o.in_graph && !device)
    user_error("--in-graph times the kernels inside a CUDA graph; '{}' ({} artifact) has no such "
               "graph: profile it without --in-graph", o.model, art->manifest().target);
  const std::vector<Tensor> inputs = random_inputs(art->manifest(), "profile");
  // Per kernel: its symbol, what it computes, and its times over the runs.
  std::vector<std::string> symbols;
  std::vector<nlohmann::json> tasks;
  for (runtime::KernelInfo& k : engine->kernels()) {
    symbols.push_back(std::move(k.symbol));
    tasks.push_back(std::move(k.task));
  }
  std::vector<std::vector<double>> samples(symbols.size());
  engine->run(inputs);  // warm-up
  for (int it = 0; it < o.iters; ++it) {
    const std::vector<double> ms = engine->profile_kernels(inputs);
    for (size_t i = 0; i < samples.size() && i < ms.size(); ++i) samples[i].push_back(ms[i]);
  }
  // --in-graph: the latency each kernel adds inside the device's graph.
  std::vector<double> added;
  nlohmann::json graph_totals;
  if (o.in_graph) {
    InGraphProfile p = device->profile_in_graph(*engine, o.iters);
    added = std::move(p.added_ms);
    graph_totals = std::move(p.totals);
  }
  const size_t n = symbols.size();
  struct Row {
    size_t call;
    double ms;
  };
  std::vector<Row> rows;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    rows.push_back({i, median(samples[i])});
    total += rows.back().ms;
  }
  auto key = [&](const Row& r) { return added.empty() ? r.ms : added[r.call]; };
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) { return key(a) > key(b); });
  nlohmann::json out = nlohmann::json::array();
  fmt::print("{}: {} kernels, {}, sum of kernel medians {:.3f} ms\n", o.model, n, engine->device(),
             total);
  fmt::print("{:>5} {:>9} {:>6} {:>8}{}  {:<12} {}\n", "call", "ms", "%", "GFLOP/s",
             added.empty() ? "" : fmt::format(" {:>9}", "+graph ms"), "template",
             "workload | config");
  for (size_t r = 0; r < rows.size(); ++r) {
    const nlohmann::json& task = tasks[rows[r].call];
    const double flops = task.value("flops", 0.0);
    const double gflops = rows[r].ms > 0 ? flops / (rows[r].ms * 1e6) : 0;
    out.push_back({{"call", rows[r].call},
                   {"symbol", symbols[rows[r].call]},
                   {"median_ms", rows[r].ms},
                   {"gflops", gflops},
                   {"task", task}});
    if (!added.empty()) out.back()["in_graph_added_ms"] = added[rows[r].call];
    if (static_cast<int>(r) < o.top)
      fmt::print("{:>5} {:>9.3f} {:>6.1f} {:>8.1f}{}  {:<12} {} | {}\n", rows[r].call, rows[r].ms,
                 100.0 * rows[r].ms / std::max(total, 1e-9), gflops,
                 added.empty() ? "" : fmt::format(" {:>9.4f}", added[rows[r].call]),
                 task_str(task, "template"), task_str(task, "key"), task_str(task, "config"));
  }
  if (!o.json.empty())
    write_json(o.json,
                    {{"model", o.model},
                     {"device", engine->device()},
                     {"total_ms", total},
                     {"in_graph", graph_totals},
                     {"kernels", out}},
                    "--json");
}

}  // namespace

void add_profile(CLI::App& app) {
  auto o = std::make_shared<ProfileOptions>();
  auto* c = app.add_subcommand("profile", "Time every kernel of a compiled model");
  c->add_option("model", o->model, "compiled .ycm artifact, or ONNX model")->required();
  c->add_option("--batch", o->batch, "images per run (ONNX models)")->check(CLI::PositiveNumber);
  c->add_option("--iters", o->iters, "profiled runs")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--threads", o->threads, "worker threads (default: all hardware threads)")
      ->check(CLI::PositiveNumber);
  c->add_option("--device", o->device, "GPU of a CUDA artifact")->check(CLI::NonNegativeNumber);
  c->add_option("--top", o->top, "rows to print")->capture_default_str();
  c->add_flag("--in-graph", o->in_graph,
              "CUDA: also time the network's graph cut after each kernel, to show what each "
              "kernel adds to the latency (sorts by that)");
  add_artifact_load_options(*c, o->load);
  add_on_the_fly_options(*c, o->compile);
  c->add_option("--json", o->json, "write every kernel's figures to FILE, or to stdout with '-' (the text then goes to stderr)");
  c->callback([o] { run_profile(*o); });
}

}  // namespace yoloc::tools
