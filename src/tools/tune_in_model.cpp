#include "tools/tune_in_model.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>

#include "artifact/artifact_reader.h"
#include "runtime/executor.h"
#include "compiler/compile.h"
#include "tuner/isolate.h"
#include "tuner/report.h"

namespace yoloc::tools {
namespace {

namespace fs = std::filesystem;
using codegen::ScheduleConfig;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// A temporary folder, removed with the object.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "yoloc-tune-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) user_error("cannot create a temporary folder like {}", tmpl);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// Runs every artifact `rounds` times in turns (a different one first each round), `iters`
/// profiled runs each; returns, per artifact, round and call, the per-run milliseconds:
/// {"calls": [{"artifact": j, "round": r, "key": KEY, "ms": [...]}, ...]}.
std::string profile_artifacts(const std::vector<std::string>& paths, const InModelOptions& o) {
  std::vector<std::unique_ptr<runtime::Executor>> execs;
  std::vector<Tensor> inputs;
  for (const std::string& p : paths) {
    auto art = std::make_shared<const artifact::Artifact>(artifact::Artifact::open(p));
    if (inputs.empty()) {
      std::mt19937 rng(0);
      std::uniform_real_distribution<float> dist(0.f, 1.f);
      for (const artifact::TensorSpec& spec : art->manifest().inputs) {
        Tensor t(dtype_from_name(spec.dtype), spec.shape);
        for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
        inputs.push_back(std::move(t));
      }
    }
    execs.push_back(std::make_unique<runtime::Executor>(art, o.threads));
    execs.back()->set_profiling(true);
  }
  nlohmann::json calls = nlohmann::json::array();
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t k = 0; k < execs.size(); ++k) {
      const size_t j = (k + static_cast<size_t>(r)) % execs.size();
      runtime::Executor& e = *execs[j];
      e.run(inputs);  // warm-up: the previous artifact's data left the caches
      const size_t n = e.program().calls.size();
      std::vector<std::vector<double>> ms(n);
      for (int it = 0; it < o.iters; ++it) {
        e.run(inputs);
        for (size_t c = 0; c < n; ++c) ms[c].push_back(e.last_call_ms()[c]);
      }
      for (size_t c = 0; c < n; ++c) {
        calls.push_back({{"artifact", j},
                         {"round", r},
                         {"key", e.program().calls[c].task.value("key", "")},
                         {"ms", ms[c]}});
      }
    }
  }
  return nlohmann::json{{"calls", calls}}.dump();
}

}  // namespace

InModelSummary measure_in_model(const DetectorModelOptions& model,
                                const std::vector<tuner::TuneTask>& tasks,
                                const tuner::RecordQuery& query, const std::string& records,
                                const InModelOptions& o, tuner::ProgressDisplay& progress) {
  const auto start = std::chrono::steady_clock::now();
  InModelSummary sum;
  // Each task's default, then its best configs timed alone.
  const tuner::RecordSet set = tuner::load_records(records);
  const auto alone = tuner::config_times(set.records, [&](const tuner::Record& r) {
    return tuner::record_matches(r, query) && r.mode == "kernel";
  });
  std::map<std::string, std::vector<ScheduleConfig>> ranked;
  size_t ranks = 1;
  for (const tuner::TuneTask& t : tasks) {
    std::vector<ScheduleConfig>& list = ranked[t.key()];
    list.push_back(t.task.default_config);
    const auto it = alone.find(t.key());
    if (it == alone.end()) continue;
    // (seconds per image, config read in today's form: it may predate knobs, Knob::absent).
    std::vector<std::pair<double, ScheduleConfig>> best;
    for (const auto& [str, ct] : it->second) {
      ScheduleConfig cfg = t.task.space.complete(ct.config);
      if (!(cfg == t.task.default_config) && t.task.valid(cfg))
        best.emplace_back(ct.seconds_per_image, std::move(cfg));
    }
    std::stable_sort(best.begin(), best.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // The same config may be stored in both forms: once each.
    for (size_t i = 0; i < best.size() && static_cast<int>(list.size()) <= o.top; ++i)
      if (std::find(list.begin(), list.end(), best[i].second) == list.end())
        list.push_back(best[i].second);
    ranks = std::max(ranks, list.size());
  }
  if (ranks < 2) return sum;

  // Artifact j: every task at its rank-j config (its last one where it has fewer).
  TempDir dir;
  std::vector<std::string> paths;
  std::vector<std::map<std::string, ScheduleConfig>> configs(ranks);
  const auto seconds_left = [&] {
    return o.deadline ? std::chrono::duration<double>(*o.deadline -
                                                      std::chrono::steady_clock::now())
                            .count()
                      : 1e30;
  };
  double compile_s = 0;  // the longest compile so far
  for (size_t j = 0; j < ranks; ++j) {
    // Another compile, and the runs after it, must end within the budget.
    if (seconds_left() < 1.5 * compile_s + 2.0) {
      progress.note(fmt::format("in the model: the time budget ends: {} of {} artifacts",
                                paths.size(), ranks));
      break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& [key, list] : ranked) configs[j][key] = list[std::min(j, list.size() - 1)];
    CompileOptions c;
    c.model = model;  // the compile options of the model (its path aside)
    c.output = (fs::path(dir.path) / fmt::format("rank{}.ycm", j)).string();
    c.isa = o.isa;
    c.no_cache = true;  // candidates' builds, seldom built again: they would crowd the cache out
    progress.note(fmt::format("in the model: compiling rank {} of {}", j + 1, ranks));
    // In a child process, so that a compile that would outlast the budget (the first one, whose
    // time is not known yet) is stopped at it.
    std::string error;
    const std::optional<std::string> built = tuner::run_isolated(
        [&] {
          compiler::compile(model.path, c, configs[j]);
          return std::string("built");
        },
        std::max(0.5, seconds_left() - 1.0), error);
    if (!built) {
      progress.note(fmt::format("in the model: rank {} not compiled ({}): {} of {} artifacts",
                                j + 1, error, paths.size(), ranks));
      break;
    }
    paths.push_back(c.output);
    compile_s = std::max(
        compile_s,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (paths.size() < 2) return sum;  // nothing to compare
  progress.note(fmt::format("in the model: {} artifacts, {} rounds of {} runs each", paths.size(),
                            o.rounds, o.iters));
  std::string error;
  const std::optional<std::string> out =
      tuner::run_isolated([&] { return profile_artifacts(paths, o); },
                          std::max(1.0, std::min(o.timeout_s, seconds_left())), error);
  if (!out) {
    progress.note("in the model: the runs failed (" + error + "); no records added");
    return sum;
  }
  const nlohmann::json j = nlohmann::json::parse(*out, nullptr, false);
  if (j.is_discarded() || !j.contains("calls")) {
    progress.note("in the model: the runs sent no readable result; no records added");
    return sum;
  }
  // Per (artifact, key): per round, the per-run time of one occurrence (calls of the same
  // workload in one run averaged).
  struct Samples {
    std::map<int, std::vector<std::vector<double>>> rounds;  // round -> calls -> per-run ms
  };
  std::map<std::pair<size_t, std::string>, Samples> samples;
  for (const nlohmann::json& c : j["calls"]) {
    const auto a = c["artifact"].get<size_t>();
    samples[{a, c["key"].get<std::string>()}].rounds[c["round"].get<int>()].push_back(
        c["ms"].get<std::vector<double>>());
  }
  // The same config of a task may run in several artifacts: its samples are pooled.
  std::map<std::pair<std::string, std::string>, std::pair<ScheduleConfig, std::vector<double>>>
      per_config;  // (key, config) -> (config, per-round medians in seconds)
  std::map<std::pair<std::string, std::string>, std::vector<double>> all_runs;
  for (const auto& [ak, s] : samples) {
    const auto& [a, key] = ak;
    const auto cfg = configs.at(a).find(key);
    if (cfg == configs.at(a).end()) continue;
    auto& entry = per_config[{key, cfg->second.str()}];
    entry.first = cfg->second;
    for (const auto& [round, calls] : s.rounds) {
      std::vector<double> per_run;
      for (size_t run = 0; run < calls[0].size(); ++run) {
        double total = 0;
        for (const std::vector<double>& call : calls) total += call.at(run);
        per_run.push_back(total / static_cast<double>(calls.size()) / 1e3);
      }
      entry.second.push_back(median(per_run));
      auto& all = all_runs[{key, cfg->second.str()}];
      all.insert(all.end(), per_run.begin(), per_run.end());
    }
  }
  tuner::RecordWriter writer(records);
  std::map<std::string, const tuner::TuneTask*> by_key;
  for (const tuner::TuneTask& t : tasks) by_key[t.key()] = &t;
  for (const auto& [kc, entry] : per_config) {
    const tuner::TuneTask* t = by_key.count(kc.first) ? by_key.at(kc.first) : nullptr;
    if (!t) continue;
    tuner::Record r;
    r.key = kc.first;
    r.template_name = t->task.template_name;
    r.target = query.target;
    r.config = entry.first;
    r.batch = query.batch;
    r.threads = o.threads;
    r.clock = "wall";
    r.mode = "model";
    r.times = entry.second;
    r.median = median(all_runs.at(kc));
    r.flops = t->task.flops;
    r.time = tuner::now_iso8601();
    if (r.median <= 0) continue;
    writer.write(r);
    ++sum.records;
  }
  sum.artifacts = static_cast<int>(ranks);
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sum;
}

}  // namespace yoloc::tools
