#include "tuner/measure.h"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <random>

#include "codegen/cpu/cpu_compiler.h"
#include "core/error.h"
#include "runtime/kernel_library.h"
#include "runtime/thread_pool.h"
#include "tuner/measure_worker.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using codegen::cpu::KernelArg;
using codegen::cpu::LoweredKernel;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// 64-byte aligned bytes: the kernels may use aligned vector loads, as the arena allows.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(uint64_t bytes) : bytes_(bytes) {
    const uint64_t n = std::max<uint64_t>(64, (bytes + 63) / 64 * 64);
    data_.reset(static_cast<std::byte*>(std::aligned_alloc(64, n)));
    if (!data_) throw std::bad_alloc();
  }
  std::byte* data() const { return data_.get(); }
  float* floats() const { return reinterpret_cast<float*>(data_.get()); }
  uint64_t bytes() const { return bytes_; }
  uint64_t count() const { return bytes_ / sizeof(float); }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  uint64_t bytes_ = 0;
};

/// What a task's candidates share: random inputs and the reference outputs (by argument index).
struct TaskData {
  std::vector<Buffer> inputs;
  std::vector<Buffer> reference;
  bool has_reference = false;
  std::string reference_error;         // why the reference failed; empty while it has not
  std::map<std::string, double> kept;  // built candidates kept (config -> seconds)
};

/// One candidate of a batch, lowered.
struct Candidate {
  ScheduleConfig config;
  LoweredKernel kernel;
  std::vector<Buffer> constants;  // by argument index
  std::string symbol;             // the ABI wrapper
  int64_t items = 0;              // work items of one run over the batch
  int object = -1;                // the shared object it is built into
  bool reference = false;
  std::string action;  // injected fault
};

struct Object {
  std::vector<size_t> members;
  std::shared_ptr<const std::string> so;
  std::string error;
};

/// A built candidate kept for later measurements of the same config (the final re-measurement
/// of the best ones): its shared object and wrapper symbol.
struct Built {
  std::shared_ptr<const std::string> so;
  std::string symbol;
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

/// A float that no kernel computes: outputs start as it, so unwritten elements show.
constexpr uint32_t kSentinelBits = 0x7fc0beefu;

bool same_bits_sentinel(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b == kSentinelBits;
}

class CpuMeasurer : public Measurer {
 public:
  explicit CpuMeasurer(const MeasureOptions& o)
      : opt_(o), injections_(parse_injections(o.inject)) {}

  std::vector<MeasureResult> measure(const TuneTask& task,
                                     const std::vector<ScheduleConfig>& configs,
                                     double best_known_s) override;
  double build_seconds() const override { return build_s_; }
  double run_seconds() const override { return run_s_; }

 private:
  TaskData& data_of(const TuneTask& task, const LoweredKernel& k);
  /// Builds cands[i] for i in `todo` into new objects appended to `objects`.
  void build(std::vector<Candidate>& cands, const std::vector<size_t>& todo,
             std::vector<Object>& objects, int64_t batch, std::vector<MeasureResult>& results);
  /// Keeps the builds of a task's default and fastest configs, drops the others.
  void keep_fastest(const TuneTask& task, TaskData& data, const std::vector<Candidate>& cands,
                    const std::vector<MeasureResult>& results);
  /// Runs the built candidates in forked workers (see run_workers).
  void run(const TuneTask& task, TaskData& data, const std::vector<Candidate>& cands,
           const std::vector<Object>& objects, double best_known_s,
           std::vector<MeasureResult>& results, std::vector<bool>& done);
  MeasureResult run_one(const TuneTask& task, TaskData& data, const Candidate& c,
                        const runtime::KernelLibrary& lib, runtime::ThreadPool& pool,
                        double best_known_s, std::byte* shared_ref, Buffer* flush);

  MeasureOptions opt_;
  std::vector<Injection> injections_;
  std::map<std::string, TaskData> tasks_;
  std::map<std::string, Built> built_;  // by task key + "|" + config
  double build_s_ = 0, run_s_ = 0;
};

TaskData& CpuMeasurer::data_of(const TuneTask& task, const LoweredKernel& k) {
  auto [it, fresh] = tasks_.try_emplace(task.key());
  TaskData& d = it->second;
  if (!fresh) return d;
  // Inputs in [-1, 1] from a fixed seed: every candidate of the task sees the same data.
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const auto batch = static_cast<uint64_t>(task.task.batch);
  d.inputs.resize(k.args.size());
  d.reference.resize(k.args.size());
  for (size_t i = 0; i < k.args.size(); ++i) {
    const KernelArg& a = k.args[i];
    if (a.kind != KernelArg::Kind::kActivation || a.output) continue;
    d.inputs[i] = Buffer(a.bytes * batch);
    for (uint64_t e = 0; e < d.inputs[i].count(); ++e) d.inputs[i].floats()[e] = dist(rng);
  }
  return d;
}

void CpuMeasurer::build(std::vector<Candidate>& cands, const std::vector<size_t>& todo,
                        std::vector<Object>& objects, int64_t batch,
                        std::vector<MeasureResult>& results) {
  if (todo.empty()) return;
  const auto t0 = Clock::now();
  const int jobs = std::max(1, opt_.build_jobs);
  // Spread the batch over the compilers, at most max_per_object candidates per object.
  const size_t per = std::clamp<size_t>((todo.size() + jobs - 1) / jobs, 1,
                                        static_cast<size_t>(std::max(1, opt_.max_per_object)));
  const size_t first = objects.size();
  for (size_t i = 0; i < todo.size(); i += per) {
    Object o;
    for (size_t j = i; j < std::min(todo.size(), i + per); ++j) o.members.push_back(todo[j]);
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
  parallel_for_each(objects.size() - first, jobs, [&](size_t i) { compile(objects[first + i]); });
  // One candidate that does not compile fails its whole object: build those one by one.
  std::vector<Object> singles;
  for (size_t oi = first; oi < objects.size(); ++oi) {
    Object& o = objects[oi];
    if (o.error.empty() || o.members.size() == 1) continue;
    for (size_t m : o.members) singles.push_back(Object{{m}, nullptr, ""});
    o.members.clear();
  }
  parallel_for_each(singles.size(), jobs, [&](size_t i) { compile(singles[i]); });
  for (Object& o : singles) objects.push_back(std::move(o));
  for (size_t oi = first; oi < objects.size(); ++oi) {
    for (size_t m : objects[oi].members) {
      cands[m].object = static_cast<int>(oi);
      if (!objects[oi].error.empty())
        results[m].error = "build failed: " + first_lines(objects[oi].error);
    }
  }
  build_s_ += since(t0);
}

MeasureResult CpuMeasurer::run_one(const TuneTask& task, TaskData& data, const Candidate& c,
                                   const runtime::KernelLibrary& lib, runtime::ThreadPool& pool,
                                   double best_known_s, std::byte* shared_ref, Buffer* flush) {
  MeasureResult r;
  if (!c.reference && !data.has_reference) {
    r.error = "no reference: the default config did not run";
    r.skipped = true;
    return r;
  }
  const auto fn = reinterpret_cast<yoloc_kernel_fn>(lib.symbol(c.symbol));
  const auto batch = static_cast<uint64_t>(task.task.batch);
  std::vector<void*> args;
  std::vector<Buffer> outs(c.kernel.args.size());
  for (size_t i = 0; i < c.kernel.args.size(); ++i) {
    const KernelArg& a = c.kernel.args[i];
    switch (a.kind) {
      case KernelArg::Kind::kNull: continue;
      case KernelArg::Kind::kConstant: args.push_back(c.constants[i].data()); continue;
      case KernelArg::Kind::kActivation:
        if (!a.output) {
          args.push_back(data.inputs[i].data());
          continue;
        }
        outs[i] = Buffer(a.bytes * batch);
        for (uint64_t e = 0; e < outs[i].count(); ++e)
          std::memcpy(outs[i].floats() + e, &kSentinelBits, sizeof(float));
        args.push_back(outs[i].data());
        continue;
    }
  }
  if (c.action == "crash") std::raise(SIGSEGV);
  if (c.action == "hang")
    for (;;) pause();
  const auto run = [&] {
    pool.parallel_for(c.items, [&](int64_t b, int64_t e) { fn(args.data(), nullptr, b, e); });
  };
  // One thread: the caller's CPU time, which time slices lost to other processes do not
  // inflate; several: wall time.
  const bool cpu_clock = opt_.cpu_clock && pool.threads() == 1;
  const auto now = [cpu_clock] {
    if (!cpu_clock) return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  double t0 = now();
  run();
  const double first = now() - t0;
  if (c.action == "wrong") {
    for (Buffer& o : outs)
      if (o.count()) o.floats()[0] += 1.f;
  }

  // The check against the reference (or, for the reference itself, keeping its outputs).
  uint64_t shared_off = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].count()) continue;
    if (c.reference) {
      data.reference[i] = Buffer(outs[i].bytes());
      std::memcpy(data.reference[i].data(), outs[i].data(), outs[i].bytes());
      std::memcpy(shared_ref + shared_off, outs[i].data(), outs[i].bytes());
      shared_off += (outs[i].bytes() + 63) / 64 * 64;
      continue;
    }
    const float* ref = data.reference[i].floats();
    const float* got = outs[i].floats();
    for (uint64_t e = 0; e < outs[i].count(); ++e) {
      const bool both_unwritten = same_bits_sentinel(ref[e]) && same_bits_sentinel(got[e]);
      const bool both_nan = std::isnan(ref[e]) && std::isnan(got[e]);
      if (both_unwritten || both_nan) continue;
      if (!(std::fabs(got[e] - ref[e]) <= opt_.atol + opt_.rtol * std::fabs(ref[e]))) {
        r.error = fmt::format(
            "wrong output: argument {} element {} is {} where the default "
            "config computes {}",
            i, e, got[e], ref[e]);
        return r;
      }
    }
  }
  if (c.reference) data.has_reference = true;

  if (best_known_s > 0 && first > opt_.max_slowdown * best_known_s) {
    r.times = {first};
  } else {
    t0 = now();
    run();  // warm-up, also calibrates the runs per repeat
    const double warm = std::max(now() - t0, 1e-7);
    // With flushes, every timed run starts cold: one run per repeat.
    const int number =
        flush ? 1 : static_cast<int>(std::clamp(std::ceil(opt_.min_repeat_s / warm), 1.0, 1e6));
    for (int rep = 0; rep < std::max(1, opt_.repeats); ++rep) {
      if (flush) {
        for (uint64_t e = 0; e < flush->count(); e += 16) flush->floats()[e] += 1.f;
        // The flush writes back dirty lines: let the core's stores drain before the clock
        // starts (a fence orders them).
        std::atomic_thread_fence(std::memory_order_seq_cst);
      }
      t0 = now();
      for (int k = 0; k < number; ++k) run();
      r.times.push_back((now() - t0) / number);
    }
  }
  std::vector<double> sorted = r.times;
  std::sort(sorted.begin(), sorted.end());
  r.median = sorted[sorted.size() / 2];
  return r;
}

void CpuMeasurer::run(const TuneTask& task, TaskData& data, const std::vector<Candidate>& cands,
                      const std::vector<Object>& objects, double best_known_s,
                      std::vector<MeasureResult>& results, std::vector<bool>& done) {
  const auto batch = static_cast<uint64_t>(task.task.batch);
  // The reference's outputs come back through shared memory.
  uint64_t ref_bytes = 0;
  for (const KernelArg& a : cands[0].kernel.args)
    if (a.output) ref_bytes += (a.bytes * batch + 63) / 64 * 64;
  SharedMemory shared(ref_bytes);
  // The worker's state: made in the worker (setup), empty in this process.
  std::unique_ptr<runtime::ThreadPool> pool;
  std::unique_ptr<Buffer> flush;
  std::map<int, std::unique_ptr<runtime::KernelLibrary>> libs;
  WorkerSpec spec;
  spec.timeout_s = opt_.timeout_s;
  spec.setup = [&] {
    pool = std::make_unique<runtime::ThreadPool>(std::max(1, opt_.threads));
    if (opt_.cache_flush) {
      // Twice the core's private cache: in a model run a kernel's weights and inputs come from
      // the shared last-level cache (or memory), not from L1/L2 warmed by its previous run.
      const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
      flush = std::make_unique<Buffer>(2 * static_cast<uint64_t>(l2 > 0 ? l2 : 2 << 20));
      std::memset(flush->data(), 0, flush->bytes());
    }
  };
  spec.run = [&](size_t i) {
    const Candidate& c = cands[i];
    auto& lib = libs[c.object];
    if (!lib)
      lib = std::make_unique<runtime::KernelLibrary>(*objects[static_cast<size_t>(c.object)].so);
    return run_one(task, data, c, *lib, *pool, best_known_s, shared.data(), flush.get());
  };
  spec.on_result = [&](size_t i, const MeasureResult& r) {
    if (!cands[i].reference || !r.error.empty()) return;
    // Keep the reference for later workers of this task.
    uint64_t off = 0;
    for (size_t a = 0; a < cands[i].kernel.args.size(); ++a) {
      const KernelArg& ka = cands[i].kernel.args[a];
      if (!ka.output) continue;
      const uint64_t bytes = ka.bytes * batch;
      data.reference[a] = Buffer(bytes);
      std::memcpy(data.reference[a].data(), shared.data() + off, bytes);
      off += (bytes + 63) / 64 * 64;
    }
    data.has_reference = true;
  };
  const std::string fatal = run_workers(results, done, spec, [&](size_t i) {
    return data.has_reference || cands[i].reference;
  });
  for (size_t i = 0; i < cands.size() && !fatal.empty(); ++i) {
    if (done[i]) continue;
    results[i].error = "the measurement worker failed: " + fatal;
    done[i] = true;
  }
}

std::vector<MeasureResult> CpuMeasurer::measure(const TuneTask& task,
                                                const std::vector<ScheduleConfig>& configs,
                                                double best_known_s) {
  std::vector<MeasureResult> results(configs.size());
  if (configs.empty()) return results;
  YOLOC_CHECK(task.cpu(), "tuner: the CPU measurer got the non-CPU task {}", task.key());
  const codegen::cpu::CpuTask& t = *task.cpu();
  std::vector<Candidate> cands(configs.size());
  TaskData* data = nullptr;
  for (size_t i = 0; i < configs.size(); ++i) {
    Candidate& c = cands[i];
    c.config = configs[i];
    YOLOC_CHECK(t.valid(c.config), "tuner: config {} is not valid for {}", c.config.str(), t.key);
    c.kernel = t.lower(c.config, fmt::format("yc_c{}", i));
    c.symbol = fmt::format("yc_m{}", i);
    c.items = c.kernel.kernel.work_items * t.batch;
    c.action = injected_action(injections_, t.template_name, c.config);
    c.constants.resize(c.kernel.args.size());
    for (size_t a = 0; a < c.kernel.args.size(); ++a) {
      const KernelArg& arg = c.kernel.args[a];
      if (arg.kind != KernelArg::Kind::kConstant) continue;
      c.constants[a] = Buffer(arg.data.size() * sizeof(float));
      std::memcpy(c.constants[a].data(), arg.data.data(), c.constants[a].bytes());
    }
    if (!data) data = &data_of(task, c.kernel);
  }
  if (!data->has_reference && data->reference_error.empty()) {
    YOLOC_CHECK(configs[0] == t.default_config,
                "tuner: the first candidates of {} must start with its default config", t.key);
    cands[0].reference = true;
  }
  std::vector<bool> done(cands.size(), false);
  if (!data->reference_error.empty()) {
    for (MeasureResult& r : results) {
      r.error = "no reference: " + data->reference_error;
      r.skipped = true;
    }
    return results;
  }

  // Candidates built before (kept by keep_fastest) run from their object; the others are built.
  std::vector<Object> objects;
  std::map<const std::string*, size_t> kept_objects;
  std::vector<size_t> todo;
  for (size_t i = 0; i < cands.size(); ++i) {
    const auto it = built_.find(t.key + "|" + cands[i].config.str());
    if (it == built_.end() || !cands[i].action.empty()) {
      todo.push_back(i);
      continue;
    }
    auto [o, fresh] = kept_objects.emplace(it->second.so.get(), objects.size());
    if (fresh) objects.push_back(Object{{}, it->second.so, ""});
    objects[o->second].members.push_back(i);
    cands[i].object = static_cast<int>(o->second);
    cands[i].symbol = it->second.symbol;
  }
  build(cands, todo, objects, t.batch, results);
  for (size_t i = 0; i < cands.size(); ++i) done[i] = !results[i].error.empty();

  const auto t0 = Clock::now();
  run(task, *data, cands, objects, best_known_s, results, done);
  run_s_ += since(t0);
  if (cands[0].reference && !results[0].ok()) {
    data->reference_error = "the default config failed (" + results[0].error + ")";
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    if (done[i]) continue;
    results[i].error = data->reference_error.empty()
                           ? "not run: the measurement worker stopped before it"
                           : "no reference: " + data->reference_error;
    results[i].skipped = true;
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!results[i].ok() || cands[i].object < 0) continue;
    built_[t.key + "|" + cands[i].config.str()] =
        Built{objects[static_cast<size_t>(cands[i].object)].so, cands[i].symbol};
  }
  keep_fastest(task, *data, cands, results);
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
