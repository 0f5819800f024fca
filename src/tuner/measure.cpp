#include "tuner/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "codegen/cpu/cpu_compiler.h"
#include "core/error.h"
#include "tuner/cpu_tasks.h"
#include "tuner/cpu_worker.h"
#include "tuner/measure_common.h"
#include "tuner/worker_pool.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using codegen::cpu::KernelArg;
using codegen::cpu::LoweredKernel;

/// What this process knows of a task (its inputs and reference outputs live in the worker).
struct TaskData : TaskReference {
  std::map<std::string, double> kept;  // built candidates kept (config -> seconds)
};

/// One candidate of a batch, lowered.
struct Candidate {
  ScheduleConfig config;
  LoweredKernel kernel;
  std::string symbol;  // the ABI wrapper
  int64_t items = 0;   // work items of one run over the batch
  int object = -1;     // the shared object it is built into
  bool reference = false;
  std::string action;  // injected fault
};

struct Object {
  std::vector<size_t> members;
  std::shared_ptr<const std::string> so;
  std::string error;
  uint64_t id = 0;  // unique in the measurer: the worker loads each object once
};

/// A built candidate kept for later measurements of the same config (the final re-measurement
/// of the best ones): its shared object and wrapper symbol.
struct Built {
  std::shared_ptr<const std::string> so;
  std::string symbol;
  uint64_t id = 0;
};

std::vector<uint64_t> batch_strides(const LoweredKernel& k, int64_t batch) {
  std::vector<uint64_t> s;
  for (const KernelArg& a : k.args) {
    if (a.kind == KernelArg::Kind::kNull) continue;
    s.push_back(a.kind == KernelArg::Kind::kActivation && batch > 1 ? a.bytes : 0);
  }
  return s;
}

std::string object_source(const std::vector<Candidate>& cands, const Object& o, int64_t batch) {
  std::string src = "// yoloc tuner: candidates of one task\n#include <stdint.h>\n";
  for (size_t i : o.members) {
    const Candidate& c = cands[i];
    src += fmt::format("\n// ---- candidate {} | {}\n", i, c.config.str());
    src += c.kernel.kernel.source;
    src +=
        codegen::cpu::abi_wrapper_source(c.kernel, c.symbol, batch, batch_strides(c.kernel, batch));
  }
  return src;
}

WorkerSpec cpu_worker_spec(const MeasureOptions& o) {
  WorkerSpec spec;
  spec.timeout_s = o.timeout_s;
  spec.start = [o] { return start_cpu_worker(o); };
  return spec;
}

/// A batch of candidates, lowered and built (results[i].error: candidate i did not build).
struct CpuBatch : BuiltBatch {
  const TuneTask* task = nullptr;
  std::vector<Candidate> cands;
  std::vector<Object> objects;
  std::vector<MeasureResult> results;
};

class CpuMeasurer : public Measurer {
 public:
  explicit CpuMeasurer(const MeasureOptions& o)
      : Measurer(o.build_jobs),
        opt_(o),
        injections_(parse_injections(o.inject)),
        pool_({cpu_worker_spec(o)}) {}

  int worker_starts() const override { return pool_.starts(); }

 protected:
  std::unique_ptr<BuiltBatch> build_batch(const TuneTask& task,
                                          const std::vector<ScheduleConfig>& configs,
                                          BuildJobs& jobs) override;
  std::vector<MeasureResult> run_batch(BuiltBatch& built, double best_known_s) override;

 private:
  /// Builds cands[i] for i in `todo` into new objects appended to `objects`, on compilers of
  /// `jobs`.
  void compile(std::vector<Candidate>& cands, const std::vector<size_t>& todo,
               std::vector<Object>& objects, int64_t batch, std::vector<MeasureResult>& results,
               BuildJobs& jobs);
  /// Keeps the builds of a task's default and fastest configs, drops the others (built_mutex_
  /// held).
  void keep_fastest(const TuneTask& task, TaskData& data, const std::vector<Candidate>& cands,
                    const std::vector<MeasureResult>& results);
  /// The request that carries cands[i] to the worker.
  std::string request(const TuneTask& task, const Candidate& c, const Object& o, MeasureRole role,
                      double best_known_s) const;

  MeasureOptions opt_;
  std::vector<Injection> injections_;
  std::map<std::string, TaskData> tasks_;  // of run_batch only
  std::mutex built_mutex_;                 // a build reads built_ while a run updates it
  std::map<std::string, Built> built_;     // by task key + "|" + config
  WorkerPool pool_;
  std::atomic<uint64_t> objects_built_{0};
};

void CpuMeasurer::compile(std::vector<Candidate>& cands, const std::vector<size_t>& todo,
                          std::vector<Object>& objects, int64_t batch,
                          std::vector<MeasureResult>& results, BuildJobs& compilers) {
  if (todo.empty()) return;
  const int jobs = build_jobs();
  // Spread the batch over the compilers, at most max_per_object candidates per object.
  const size_t per = std::clamp<size_t>((todo.size() + jobs - 1) / jobs, 1,
                                        static_cast<size_t>(std::max(1, opt_.max_per_object)));
  const size_t first = objects.size();
  for (size_t i = 0; i < todo.size(); i += per) {
    Object o;
    for (size_t j = i; j < std::min(todo.size(), i + per); ++j) o.members.push_back(todo[j]);
    o.id = ++objects_built_;
    objects.push_back(std::move(o));
  }
  const auto compile = [&](Object& o) {
    try {
      o.so = std::make_shared<const std::string>(
          codegen::cpu::compile_shared_object(object_source(cands, o, batch), opt_.cc).bytes);
    } catch (const std::exception& e) {
      o.error = e.what();
    }
  };
  // The compilers of the builds running at once are build_jobs in all.
  const JobLease lease = compilers.lease(static_cast<int>(objects.size() - first));
  parallel_for_each(objects.size() - first, lease.count(),
                    [&](size_t i) { compile(objects[first + i]); });
  // One candidate that does not compile fails its whole object: build those one by one.
  std::vector<Object> singles;
  for (size_t oi = first; oi < objects.size(); ++oi) {
    Object& o = objects[oi];
    if (o.error.empty() || o.members.size() == 1) continue;
    for (size_t m : o.members) singles.push_back(Object{{m}, nullptr, "", ++objects_built_});
    o.members.clear();
  }
  parallel_for_each(singles.size(), lease.count(), [&](size_t i) { compile(singles[i]); });
  for (Object& o : singles) objects.push_back(std::move(o));
  for (size_t oi = first; oi < objects.size(); ++oi) {
    for (size_t m : objects[oi].members) {
      cands[m].object = static_cast<int>(oi);
      if (!objects[oi].error.empty())
        results[m].error = "build failed: " + first_lines(objects[oi].error);
    }
  }
}

std::string CpuMeasurer::request(const TuneTask& task, const Candidate& c, const Object& o,
                                 MeasureRole role, double best_known_s) const {
  CpuRequest q;
  q.role = role;
  q.task = task.key();
  q.batch = task.task.batch;
  q.args = c.kernel.args;
  for (KernelArg& a : q.args) a.value = nullptr;  // an address of this process only
  q.object = o.id;
  q.so = o.so;
  q.symbol = c.symbol;
  q.items = c.items;
  q.action = c.action;
  q.best_known_s = best_known_s;
  return encode_cpu_request(q);
}

std::unique_ptr<BuiltBatch> CpuMeasurer::build_batch(const TuneTask& task,
                                                     const std::vector<ScheduleConfig>& configs,
                                                     BuildJobs& jobs) {
  auto b = std::make_unique<CpuBatch>();
  b->task = &task;
  b->results.resize(configs.size());
  if (configs.empty()) return b;
  YOLOC_CHECK(task.as<CpuTuneTask>(), "tuner: the CPU measurer got the non-CPU task {}", task.key());
  const codegen::cpu::CpuTask& t = task.as<CpuTuneTask>()->task;
  std::vector<Candidate>& cands = b->cands;
  cands.resize(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    Candidate& c = cands[i];
    c.config = configs[i];
    YOLOC_CHECK(t.valid(c.config), "tuner: config {} is not valid for {}", c.config.str(), t.key);
    c.kernel = t.lower(c.config, fmt::format("yc_c{}", i));
    c.symbol = fmt::format("yc_m{}", i);
    c.items = c.kernel.kernel.work_items * t.batch;
    c.action = injected_action(injections_, t.template_name, c.config);
  }
  // Candidates built before (kept by keep_fastest) run from their object; the others are built.
  std::vector<Object>& objects = b->objects;
  std::map<const std::string*, size_t> kept_objects;
  std::vector<size_t> todo;
  {
    const std::lock_guard<std::mutex> lock(built_mutex_);
    for (size_t i = 0; i < cands.size(); ++i) {
      const auto it = built_.find(t.key + "|" + cands[i].config.str());
      if (it == built_.end() || !cands[i].action.empty()) {
        todo.push_back(i);
        continue;
      }
      auto [o, fresh] = kept_objects.emplace(it->second.so.get(), objects.size());
      if (fresh) objects.push_back(Object{{}, it->second.so, "", it->second.id});
      objects[o->second].members.push_back(i);
      cands[i].object = static_cast<int>(o->second);
      cands[i].symbol = it->second.symbol;
    }
  }
  compile(cands, todo, objects, t.batch, b->results, jobs);
  return b;
}

std::vector<MeasureResult> CpuMeasurer::run_batch(BuiltBatch& built, double best_known_s) {
  CpuBatch& b = dynamic_cast<CpuBatch&>(built);
  std::vector<MeasureResult> results = std::move(b.results);
  if (b.cands.empty()) return results;
  const TuneTask& task = *b.task;
  const codegen::cpu::CpuTask& t = task.as<CpuTuneTask>()->task;
  std::vector<Candidate>& cands = b.cands;
  const std::vector<Object>& objects = b.objects;
  std::vector<ScheduleConfig> configs;
  for (const Candidate& c : cands) configs.push_back(c.config);
  TaskData& data = tasks_[task.key()];
  if (!data.start_batch(configs, t.default_config, t.key, results, &cands[0].reference))
    return results;
  std::vector<bool> done(cands.size(), false);
  for (size_t i = 0; i < cands.size(); ++i) done[i] = !results[i].error.empty();

  // A reference that did not build: nothing of the task can be checked (the others are left
  // not done, "no reference" below).
  if (!cands[0].reference || !done[0]) {
    WorkerBatch batch;
    for (size_t i = 0; i < cands.size(); ++i) {
      const MeasureRole role =
          cands[i].reference ? MeasureRole::kReference : MeasureRole::kCandidate;
      batch.requests.push_back(done[i] ? std::string()
                                       : request(task, cands[i],
                                                 objects[static_cast<size_t>(cands[i].object)],
                                                 role, best_known_s));
    }
    if (cands[0].reference) {
      batch.reference = 0;
      data.reference_request =
          request(task, cands[0], objects[static_cast<size_t>(cands[0].object)],
                  MeasureRole::kReferenceOnly, 0);
    }
    batch.reference_request = data.reference_request;
    batch.deadline = deadline();
    const std::string fatal = pool_.run(batch, results, done)[0];
    for (size_t i = 0; i < cands.size() && !fatal.empty(); ++i) {
      if (done[i]) continue;
      results[i].error = "the measurement worker failed: " + fatal;
      done[i] = true;
    }
  }
  data.end_batch(cands[0].reference, done, results);
  {
    const std::lock_guard<std::mutex> lock(built_mutex_);
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!results[i].ok() || cands[i].object < 0) continue;
      const Object& o = objects[static_cast<size_t>(cands[i].object)];
      built_[t.key + "|" + cands[i].config.str()] = Built{o.so, cands[i].symbol, o.id};
    }
    keep_fastest(task, data, cands, results);
  }
  return results;
}

void CpuMeasurer::keep_fastest(const TuneTask& task, TaskData& data,
                               const std::vector<Candidate>& cands,
                               const std::vector<MeasureResult>& results) {
  constexpr size_t kKeep = 4;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (results[i].ok()) data.kept[cands[i].config.str()] = results[i].median;
  }
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [cfg, secs] : data.kept) order.emplace_back(secs, cfg);
  std::sort(order.begin(), order.end());
  const std::string def = task.task.default_config.str();
  for (size_t i = kKeep; i < order.size(); ++i) {
    if (order[i].second == def) continue;
    data.kept.erase(order[i].second);
    built_.erase(task.key() + "|" + order[i].second);
  }
}

}  // namespace

std::unique_ptr<Measurer> make_cpu_measurer(const MeasureOptions& options) {
  return std::make_unique<CpuMeasurer>(options);
}

}  // namespace yoloc::tuner
