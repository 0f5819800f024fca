// yoloc tune MODEL --target cpu --records FILE [--trials N] [--time-budget 10m]
//            [--strategy random|grid|evolutionary] [--threads N] [--batch N] [--devices 0]
//            [--list-tasks] [--report FILE] [--fix KNOB=VALUE] [--only REGEX] [--sweep KNOB]
// yoloc tune MODEL --target cuda [--arch sm_90] [--precision fp16] [--io-precision fp16]
//            [--devices 0,1] --records FILE
//            ... (several GPUs of one kind measure a round's candidates in parallel)
// Finds fast schedule configs for the model's kernels, appending every measurement to the
// records file (a later run resumes from it); `yoloc compile --records FILE` applies them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>
#include <thread>

#include "tools/commands.h"
#include "targets/target.h"
#include "tools/tune_in_model.h"
#include "tuner/measure.h"
#include "tuner/report.h"
#include "tuner/search_space.h"
#include "tuner/target.h"
#include "tuner/tuner.h"

namespace yoloc::tools {

namespace {

/// Tuning times the network alone: the family (the post-processing) is not needed.
DetectorModelOptions tune_model_options() {
  DetectorModelOptions m;
  m.family_needed = false;
  return m;
}

struct TuneCliOptions {
  DetectorModelOptions model = tune_model_options();
  std::string target = "cpu";
  std::string records;
  int64_t trials = 0;
  std::string time_budget;
  std::string strategy = "evolutionary";
  int threads = 0;
  std::string devices = "0";
  std::string arch;  ///< cuda: the kernels' arch; empty: sm_90
  std::string isa;   ///< empty: the host's best
  bool list_tasks = false;
  std::string report;
  int round_size = 8;
  int early_stopping = 64;
  int repeats = 5;
  double min_repeat_ms = 2;
  double timeout_s = 10;
  bool cache_flush = false;
  bool wall_clock = false;
  int build_jobs = 2;
  bool build_jobs_given = false;
  std::string overlap = "auto";
  int verify_rounds = 3;
  int verify_top = 2;
  InModelOptions in_model;
  uint64_t seed = 1;
  bool quiet = false;
  std::vector<std::string> fix;  ///< KNOB=VALUE
  std::string only;              ///< a regular expression of the task keys to tune
  std::string sweep;             ///< a knob to sweep on the best configs first
};

/// --fix KNOB=VALUE (repeatable) -> {KNOB: VALUE}.
std::map<std::string, int64_t> parse_fixed(const std::vector<std::string>& fix) {
  static const std::regex re(R"(([A-Za-z_][A-Za-z0-9_]*)=(-?[0-9]+))");
  std::map<std::string, int64_t> out;
  for (const std::string& f : fix) {
    std::smatch m;
    if (!std::regex_match(f, m, re))
      user_error("--fix '{}': expected KNOB=VALUE with an integer value, e.g. wg=2", f);
    out[m[1]] = std::stoll(m[2]);
  }
  return out;
}

/// "90", "90s", "10m", "1.5h" -> seconds.
double parse_duration(const std::string& s) {
  static const std::regex re(R"(\s*([0-9]*\.?[0-9]+)\s*(s|m|min|h)?\s*)");
  std::smatch m;
  if (!std::regex_match(s, m, re))
    user_error("--time-budget '{}': expected a duration like 90s, 10m or 1.5h", s);
  const double v = std::stod(m[1]);
  const std::string unit = m[2];
  return unit == "h" ? v * 3600 : (unit == "m" || unit == "min") ? v * 60 : v;
}

/// The devices of --devices; the cpu target is one device.
std::vector<int> devices_for(const std::string& target, const std::string& devices) {
  std::vector<int> ids = tuner::parse_device_list(devices);
  if (target != "cuda" && ids.size() > 1)
    user_error("--devices {}: this target measures on one device at a time", devices);
  return ids;
}

void list_tasks(const TuneCliOptions& o, const std::vector<tuner::TuneTask>& tasks,
                const tuner::TuneReport& measured) {
  // The model's time: each task's measured default where the records have one, else a guess.
  // Alternatives (fused pairs of other tasks) are listed but not counted in the model's totals.
  std::vector<double> secs;
  double total = 0, flops = 0;
  int kernels = 0, from_records = 0, alternatives = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const double m = measured.tasks[i].default_s;
    secs.push_back(tasks[i].occurrences() * (m > 0 ? m : tuner::estimated_seconds(tasks[i])));
    if (tasks[i].task.alternative) {
      ++alternatives;
      continue;
    }
    from_records += m > 0 ? 1 : 0;
    total += secs.back();
    flops += tasks[i].model_flops();
    kernels += tasks[i].occurrences();
  }
  fmt::print("{}: {} kernels, {} tasks (distinct workloads), {:.2f} GFLOP per run (batch {})\n",
             o.model.path, kernels, tasks.size() - alternatives, flops / 1e9, o.model.batch);
  if (alternatives > 0)
    fmt::print("and {} fused pairs of them (marked 'pair'; compile fuses those timed faster)\n",
               alternatives);
  fmt::print(
      "time shares: {} of {} tasks from measured defaults in the records, the rest "
      "estimated\n",
      from_records, tasks.size() - alternatives);
  fmt::print("{:>3} {:<11} {:>3} {:>9} {:>7} {:>6} {:>6}  {}\n", "#", "template", "x", "MFLOP",
             "share", "space", "valid", "workload");
  for (size_t i = 0; i < tasks.size(); ++i) {
    const tuner::TuneTask& t = tasks[i];
    const auto valid = tuner::enumerate_valid(t.task);
    const std::string share =
        t.task.alternative ? std::string("pair") : fmt::format("{:.1f}%", 100.0 * secs[i] / total);
    fmt::print("{:>3} {:<11} {:>3} {:>9.1f} {:>7} {:>6} {:>6}  {}\n", i + 1, t.task.template_name,
               t.occurrences(), t.model_flops() / 1e6, share, t.task.space.size(),
               valid ? std::to_string(valid->size()) : std::string("?"), tuner::task_label(t, 100));
  }
}

void run_tune(const TuneCliOptions& given) {
  // --time-budget bounds the whole command: import, search, re-measurements.
  const auto start = std::chrono::steady_clock::now();
  TuneCliOptions o = given;
  const targets::Target& tune_target = targets::find_target(o.target);
  // A compile at this batch runs lanes of a smaller one: those are the kernels to tune.
  const int lanes = tune_target.lanes(o.model);
  if (lanes > 1) {
    if (!o.quiet)
      fmt::print("batch {} compiles to {} lanes of batch {} (--lanes): tuning batch {}\n",
                 o.model.batch, lanes, o.model.batch / lanes, o.model.batch / lanes);
    o.model.batch /= lanes;
  }
  if (is_artifact_path(o.model.path))
    user_error(
        "{}: tune takes the ONNX model (it tunes the tasks of its graph); compile it "
        "afterwards with --records",
        o.model.path);
  codegen::cpu::CpuIsa isa = codegen::cpu::detect_host_isa();
  if (!o.isa.empty()) {
    const auto parsed = codegen::cpu::parse_isa(o.isa);
    if (!parsed)
      user_error("--isa {}: unknown; choose one of {}", o.isa, codegen::cpu::isa_names());
    isa = *parsed;
  }
  const bool cuda = o.target == "cuda";
  if (!cuda && !o.arch.empty()) user_error("--arch {}: --arch is for --target cuda", o.arch);
  if (cuda && !o.isa.empty()) user_error("--isa {}: --isa is for --target cpu", o.isa);
  if (!cuda && o.model.precision != "auto" && o.model.precision != "fp32")
    user_error("--precision {}: the cpu target computes in fp32", o.model.precision);
  if (!cuda && !o.model.io_precision.empty() && o.model.io_precision != "fp32")
    user_error("--io-precision {}: narrow inputs and outputs are for --target cuda",
               o.model.io_precision);
  const std::vector<int> devices = devices_for(o.target, o.devices);
  const ImportedDetector d = tune_target.import_model(o.model.path, o.model);
  targets::TuneRequest request;
  request.arch = o.arch;
  request.isa = o.isa;
  request.devices = devices;
  request.list_only = o.list_tasks;
  targets::TuneSetup setup = tune_target.tuning(*d.graph, request);
  std::vector<tuner::TuneTask> tasks = std::move(setup.tasks);
  const tuner::TuneTarget target = setup.target;
  if (!o.only.empty()) {
    tasks = tuner::only_matching(tasks, o.only);
    if (tasks.empty())
      user_error("--only '{}': no task key of this model matches (see --list-tasks)", o.only);
  }
  if (!o.fix.empty()) {
    tasks = tuner::fix_knobs(tasks, parse_fixed(o.fix));
    if (tasks.empty()) user_error("--fix: no task of this model has those knob values");
  }
  // A CUDA kernel runs on the whole device: "threads" (records, queries) is 1.
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads = cuda ? 1 : o.threads > 0 ? o.threads : hardware;
  const tuner::RecordQuery query{target, o.model.batch, threads};
  const auto report_from_file = [&] {
    const tuner::RecordSet set = tuner::load_records(o.records);
    return tuner::make_report(tasks, set.records, query);
  };

  if (o.list_tasks) {
    list_tasks(o, tasks,
               o.records.empty() ? tuner::make_report(tasks, {}, query) : report_from_file());
    return;
  }
  if (o.records.empty()) user_error("tune needs --records FILE (where measurements go)");
  const bool budget = o.trials > 0 || !o.time_budget.empty();
  if (!budget && o.report.empty())
    user_error(
        "tune needs a budget (--trials N or --time-budget 10m), or --report FILE for a "
        "summary of the records");

  if (budget) {
    tuner::TuneOptions t;
    t.target = target;
    t.records = o.records;
    t.batch = o.model.batch;
    t.trials = o.trials;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (!o.time_budget.empty()) {
      const double budget_s = parse_duration(o.time_budget);
      deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(budget_s));
      // What the import took is spent; the search stops a little early, as the rounds under
      // way when it ends are still measured.
      const double left =
          std::chrono::duration<double>(*deadline - std::chrono::steady_clock::now()).count();
      t.time_budget_s = std::max(0.5, 0.95 * left - 1.0);
    }
    // The in-model re-measurement compiles the model a few times: its share of the budget.
    // (The CPU target's only: CUDA kernels are timed alone.)
    const bool in_model = !cuda && o.in_model.rounds > 0 && o.in_model.top > 0;
    t.time_budget_s -= in_model ? std::min(0.15 * t.time_budget_s, 120.0) : 0.0;
    o.in_model.deadline = deadline;
    t.strategy = o.strategy;
    t.round_size = o.round_size;
    t.early_stopping = o.early_stopping;
    t.seed = o.seed;
    t.sweep = o.sweep;
    t.verify_rounds = o.verify_rounds;
    t.verify_top = o.verify_top;
    t.measure.threads = threads;
    t.measure.repeats = o.repeats;
    t.measure.min_repeat_s = o.min_repeat_ms / 1e3;
    t.measure.timeout_s = o.timeout_s;
    t.measure.cache_flush = o.cache_flush;
    t.measure.cpu_clock = !o.wall_clock && !cuda;
    t.measure.build_jobs = o.build_jobs;
    // Building the next rounds while the current one is measured: always on a GPU; on the CPU
    // only where the compilers and the measured kernel's threads have cores of their own (they
    // would take the kernel's time slices, and its times, else).
    t.overlap =
        o.overlap == "on" || (o.overlap == "auto" && (cuda || threads + o.build_jobs <= hardware));
    t.measure.cc = codegen::cpu::host_compiler_options_for("c++", isa);  // as compile builds
    if (const char* inject = std::getenv("YOLOC_TUNE_INJECT")) t.measure.inject = inject;
    // NVRTC compilations at once: all cores unless --build-jobs says otherwise.
    if (cuda && !o.build_jobs_given) t.measure.build_jobs = hardware;
    const std::unique_ptr<tuner::Measurer> measurer =
        tune_target.make_measurer(t.measure, target, devices);
    // "device 0", or "devices 0,1 measuring in parallel".
    const std::string device_words =
        devices.size() == 1
            ? fmt::format("device {}", devices[0])
            : fmt::format("devices {} measuring in parallel", fmt::join(devices, ","));
    tuner::ProgressDisplay progress(stderr, !o.quiet);
    progress.note(
        fmt::format("tuning {} tasks of {} on {} ({}, batch {}, strategy {})", tasks.size(),
                    o.model.path, target.str(),
                    cuda ? fmt::format("{}, {}", device_words,
                                       o.model.precision == "auto" ? "fp16" : o.model.precision)
                         : fmt::format("{} threads", threads),
                    o.model.batch, o.strategy));
    const tuner::TuneSummary s = tuner::tune(tasks, t, *measurer, progress);
    fmt::print(
        "tuned {} tasks in {}: {} trials and {} re-measurements ({} failed), building "
        "{:.0f} s ({:.0f} s of it while measuring), measuring {:.0f} s{} ({} worker start{}); "
        "records in {}\n",
        tasks.size(), tuner::format_duration(s.seconds), s.trials, s.verify_trials, s.errors,
        s.build_s, s.build_overlap_s, s.run_s,
        devices.size() > 1 ? fmt::format(" on {} devices", devices.size()) : std::string(),
        s.worker_starts, s.worker_starts == 1 ? "" : "s", o.records);
    if (in_model) {
      InModelOptions im = o.in_model;
      im.threads = threads;
      im.isa = codegen::cpu::isa_name(isa);
      const InModelSummary m = measure_in_model(o.model, tasks, query, o.records, im, progress);
      progress.finish();
      if (m.artifacts > 0)
        fmt::print("timed {} configs inside the model ({} artifacts) in {}\n", m.records,
                   m.artifacts, tuner::format_duration(m.seconds));
    }
  }
  const tuner::TuneReport rep = report_from_file();
  fmt::print("{}", tuner::report_table(rep));
  if (!o.report.empty()) {
    nlohmann::json j = tuner::report_to_json(rep);
    j["model"] = o.model.path;
    j["tool_version"] = YOLOC_VERSION;
    j["records"] = o.records;
    write_json_file(o.report, j, "--report");
  }
}

}  // namespace

void add_tune(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  auto* c = app.add_subcommand(
      "tune", "Search fast kernel schedules for a model; compile applies them with --records");
  add_detector_model_options(*c, o->model);
  add_io_precision_option(*c, o->model);
  add_lanes_option(*c, o->model);
  c->get_option("model")->description(
      "ONNX model to tune (tuning needs the graph, not an artifact)");
  c->add_option("--target", o->target, "what to tune for: cpu or cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  c->add_option("--arch", o->arch, "cuda: the GPU architecture of the kernels (default sm_90)");
  c->add_option("--records", o->records,
                "JSON-lines file the measurements are appended to (and resumed from)");
  c->add_option("--trials", o->trials, "measurements in all (this run)")
      ->check(CLI::PositiveNumber);
  c->add_option("--time-budget", o->time_budget, "wall time for this run, e.g. 90s, 10m, 1h");
  c->add_option("--strategy", o->strategy, "random, grid (small spaces) or evolutionary")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "grid", "evolutionary"}));
  c->add_option("--threads", o->threads,
                "threads each kernel runs on (default: all hardware threads, as run and bench)")
      ->check(CLI::PositiveNumber);
  c->add_option("--batch", o->model.batch, "images per run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--devices,--device", o->devices,
                "devices to measure on (cpu: 0; cuda: a GPU, or several of one kind such as "
                "0,1, which measure each round's candidates in parallel, one worker each)")
      ->capture_default_str();
  c->add_option("--isa", o->isa,
                "vector ISA of the kernels (as compile --isa): avx512, avx2, generic; default: "
                "the best this CPU runs");
  c->add_flag("--list-tasks", o->list_tasks,
              "list the tasks with their FLOPs and share of the model's time, and stop");
  c->add_option("--report", o->report,
                "write a per-task summary (default vs tuned time) of the records as JSON");
  c->add_option("--round-size", o->round_size, "candidates measured per round of a task")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  c->add_option("--early-stopping", o->early_stopping,
                "trials of a task without improvement before it stops (0: never)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--repeats", o->repeats, "timed repeats per candidate (the median counts)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--min-repeat-ms", o->min_repeat_ms, "each repeat runs at least this long")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--timeout", o->timeout_s, "seconds a candidate may run before it counts as hung")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_flag("--cache-flush", o->cache_flush, "flush the caches before each timed repeat");
  c->add_flag("--wall-clock", o->wall_clock,
              "time wall clock with one thread too (default there: the thread's CPU time, which "
              "other processes on the machine do not inflate)");
  c->add_option("--build-jobs", o->build_jobs,
                "compiler processes at once, shared by the rounds built at once (cuda: NVRTC "
                "threads, default all cores)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64))
      ->each([o](const std::string&) { o->build_jobs_given = true; });
  c->add_option("--overlap", o->overlap,
                "build the next rounds while the current one is measured (as many at once as "
                "fill --build-jobs: one, or two with 16 jobs and rounds of 8): on, off, or auto "
                "(on for cuda; for cpu when --threads plus --build-jobs fit the cores)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  c->add_option("--verify-rounds", o->verify_rounds,
                "at the end, re-measure each task's default and best configs side by side this "
                "many times (0: no)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--verify-top", o->verify_top, "best configs per task the re-measurement takes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--model-rounds", o->in_model.rounds,
                "at the end, time each task's default and best configs inside whole-model runs "
                "(this many turns over the artifacts; 0: no); compile prefers these records")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--model-top", o->in_model.top,
                "best configs per task (besides the default) timed inside the model")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--model-iters", o->in_model.iters, "profiled model runs per artifact and turn")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--seed", o->seed, "random seed of the search")->capture_default_str();
  c->add_option("--fix", o->fix,
                "KNOB=VALUE: tune only the tasks with this knob, searching only the configs with "
                "this value (repeatable; e.g. wg=2, the wgmma configs of the tensor-core convs)");
  c->add_option("--only", o->only,
                "REGEX: tune only the tasks whose workload key (--list-tasks) it matches, e.g. "
                "' 3x3 ' for the 3x3 convs");
  c->add_option("--sweep", o->sweep,
                "KNOB: first measure each task's best configs with every other value of this "
                "knob (e.g. a knob added since the records were made), then search as usual");
  c->add_flag("-q,--quiet", o->quiet, "no progress display");
  c->callback([o] { run_tune(*o); });
}

}  // namespace yoloc::tools
