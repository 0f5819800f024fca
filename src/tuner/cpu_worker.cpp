#include "tuner/cpu_worker.h"

#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "core/error.h"
#include "runtime/kernel_library.h"
#include "runtime/thread_pool.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::tuner {
namespace {

using codegen::cpu::KernelArg;
using Clock = std::chrono::steady_clock;

/// Tasks and shared objects a worker keeps (the least recently used go first): a tuning run
/// comes back to a task every few rounds, and to an object only within its round and in the
/// final re-measurement.
constexpr size_t kCachedTasks = 16;
constexpr size_t kCachedObjects = 16;

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

/// A float that no kernel computes: outputs start as it, so unwritten elements show.
constexpr uint32_t kSentinelBits = 0x7fc0beefu;

bool same_bits_sentinel(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b == kSentinelBits;
}

class CpuWorker {
 public:
  explicit CpuWorker(const MeasureOptions& o) : opt_(o), pool_(std::max(1, o.threads)) {
    if (opt_.cache_flush) {
      // Twice the core's private cache: in a model run a kernel's weights and inputs come from
      // the shared last-level cache (or memory), not from L1/L2 warmed by its previous run.
      const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
      flush_ = std::make_unique<Buffer>(2 * static_cast<uint64_t>(l2 > 0 ? l2 : 2 << 20));
      std::memset(flush_->data(), 0, flush_->bytes());
    }
  }

  WorkerReply serve(std::string_view message);

 private:
  /// What the candidates of a task share in this worker: random inputs and the reference
  /// outputs (by argument index).
  struct TaskState {
    std::vector<Buffer> inputs, reference;
    bool has_reference = false;
    uint64_t used = 0;
  };
  struct Object {
    std::unique_ptr<runtime::KernelLibrary> lib;
    uint64_t used = 0;
  };

  TaskState& task_state(const CpuRequest& q);
  const runtime::KernelLibrary& library(const CpuRequest& q);
  MeasureResult run(const CpuRequest& q, TaskState& t, const runtime::KernelLibrary& lib);

  MeasureOptions opt_;
  runtime::ThreadPool pool_;
  std::unique_ptr<Buffer> flush_;
  std::map<std::string, TaskState> tasks_;
  std::map<uint64_t, Object> objects_;
  uint64_t tick_ = 0;
};

CpuWorker::TaskState& CpuWorker::task_state(const CpuRequest& q) {
  const auto batch = static_cast<uint64_t>(q.batch);
  auto [it, fresh] = tasks_.try_emplace(q.task);
  TaskState& t = it->second;
  t.used = ++tick_;
  if (fresh) {
    // Inputs in [-1, 1] from a fixed seed: every candidate of the task, in every worker, sees
    // the same data.
    std::mt19937 rng(12345);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    t.inputs.resize(q.args.size());
    t.reference.resize(q.args.size());
    for (size_t i = 0; i < q.args.size(); ++i) {
      const KernelArg& a = q.args[i];
      if (a.kind != KernelArg::Kind::kActivation || a.output) continue;
      t.inputs[i] = Buffer(a.bytes * batch);
      for (uint64_t e = 0; e < t.inputs[i].count(); ++e) t.inputs[i].floats()[e] = dist(rng);
    }
  }
  // The arguments of a workload are the same for every config.
  YOLOC_CHECK(t.inputs.size() == q.args.size(), "tuner: {} arguments of {}, {} before",
              q.args.size(), q.task, t.inputs.size());
  for (size_t i = 0; i < q.args.size(); ++i) {
    const KernelArg& a = q.args[i];
    if (a.kind == KernelArg::Kind::kActivation && !a.output)
      YOLOC_CHECK(t.inputs[i].bytes() == a.bytes * batch, "tuner: input {} of {} changed size", i,
                  q.task);
  }
  evict_lru(tasks_, [&] { return tasks_.size() > kCachedTasks; });
  return t;
}

const runtime::KernelLibrary& CpuWorker::library(const CpuRequest& q) {
  Object& o = objects_[q.object];
  o.used = ++tick_;
  if (!o.lib) {
    try {
      o.lib = std::make_unique<runtime::KernelLibrary>(*q.so);
    } catch (...) {
      objects_.erase(q.object);
      throw;
    }
  }
  const runtime::KernelLibrary& lib = *o.lib;
  evict_lru(objects_, [&] { return objects_.size() > kCachedObjects; });
  return lib;
}

WorkerReply CpuWorker::serve(std::string_view message) {
  const CpuRequest q = decode_cpu_request(message);
  TaskState& t = task_state(q);
  return serve_request(q, t, [&] { return run(q, t, library(q)); });
}

MeasureResult CpuWorker::run(const CpuRequest& q, TaskState& t, const runtime::KernelLibrary& lib) {
  MeasureResult r;
  const bool reference = q.role != MeasureRole::kCandidate;
  const auto fn = reinterpret_cast<yoloc_kernel_fn>(lib.symbol(q.symbol));
  const auto batch = static_cast<uint64_t>(q.batch);
  std::vector<void*> args;
  std::vector<Buffer> outs(q.args.size()), constants(q.args.size());
  for (size_t i = 0; i < q.args.size(); ++i) {
    const KernelArg& a = q.args[i];
    switch (a.kind) {
      case KernelArg::Kind::kNull: continue;
      case KernelArg::Kind::kConstant:
        constants[i] = Buffer(a.data.size() * sizeof(float));
        if (!a.data.empty()) std::memcpy(constants[i].data(), a.data.data(), constants[i].bytes());
        args.push_back(constants[i].data());
        continue;
      case KernelArg::Kind::kActivation:
        if (!a.output) {
          args.push_back(t.inputs[i].data());
          continue;
        }
        outs[i] = Buffer(a.bytes * batch);
        for (uint64_t e = 0; e < outs[i].count(); ++e)
          std::memcpy(outs[i].floats() + e, &kSentinelBits, sizeof(float));
        args.push_back(outs[i].data());
        continue;
    }
  }
  if (q.action == "crash") std::raise(SIGSEGV);
  if (q.action == "hang")
    for (;;) pause();
  const auto run_once = [&] {
    pool_.parallel_for(q.items, [&](int64_t b, int64_t e) { fn(args.data(), nullptr, b, e); });
  };
  // One thread: the caller's CPU time, which time slices lost to other processes do not
  // inflate; several: wall time.
  const bool cpu_clock = opt_.cpu_clock && pool_.threads() == 1;
  const auto now = [cpu_clock] {
    if (!cpu_clock) return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  double t0 = now();
  run_once();
  const double first = now() - t0;
  if (q.action == "wrong") {
    for (Buffer& o : outs)
      if (o.count()) o.floats()[0] += 1.f;
  }

  // The check against the reference (or, for the reference itself, keeping its outputs).
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].count()) continue;
    if (reference) {
      t.reference[i] = Buffer(outs[i].bytes());
      std::memcpy(t.reference[i].data(), outs[i].data(), outs[i].bytes());
      continue;
    }
    const float* ref = t.reference[i].floats();
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
  if (reference) t.has_reference = true;

  if (q.role == MeasureRole::kReferenceOnly ||
      (q.best_known_s > 0 && first > opt_.max_slowdown * q.best_known_s)) {
    r.times = {first};
  } else {
    t0 = now();
    run_once();  // warm-up, also calibrates the runs per repeat
    const double warm = std::max(now() - t0, 1e-7);
    // With flushes, every timed run starts cold: one run per repeat.
    Buffer* flush = flush_.get();
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
      for (int k = 0; k < number; ++k) run_once();
      r.times.push_back((now() - t0) / number);
    }
  }
  r.set_median();
  return r;
}

}  // namespace

std::string encode_cpu_request(const CpuRequest& q) {
  ByteWriter w;
  w.u8(static_cast<uint8_t>(q.role));
  w.bytes(q.task);
  w.i64(q.batch);
  w.u64(q.args.size());
  for (const KernelArg& a : q.args) {
    w.u8(static_cast<uint8_t>(a.kind));
    w.boolean(a.output);
    w.u64(a.bytes);
    w.bytes(std::string_view(reinterpret_cast<const char*>(a.data.data()),
                             a.data.size() * sizeof(float)));
  }
  w.u64(q.object);
  w.bytes(q.so ? std::string_view(*q.so) : std::string_view());
  w.bytes(q.symbol);
  w.i64(q.items);
  w.bytes(q.action);
  w.f64(q.best_known_s);
  return w.take();
}

CpuRequest decode_cpu_request(std::string_view message) {
  ByteReader r(message);
  CpuRequest q;
  q.role = measure_role(r.u8());
  q.task = std::string(r.bytes());
  q.batch = r.i64();
  const uint64_t n = r.u64();
  if (n > message.size()) throw MalformedMessage("a request with too many arguments");
  q.args.resize(n);
  for (KernelArg& a : q.args) {
    const uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(KernelArg::Kind::kNull))
      throw MalformedMessage("an argument of an unknown kind");
    a.kind = static_cast<KernelArg::Kind>(kind);
    a.output = r.boolean();
    a.bytes = r.u64();
    const std::string_view data = r.bytes();
    a.data.resize(data.size() / sizeof(float));
    if (!data.empty()) std::memcpy(a.data.data(), data.data(), a.data.size() * sizeof(float));
  }
  q.object = r.u64();
  q.so = std::make_shared<const std::string>(r.bytes());
  q.symbol = std::string(r.bytes());
  q.items = r.i64();
  q.action = std::string(r.bytes());
  q.best_known_s = r.f64();
  if (!r.done()) throw MalformedMessage("a request with bytes after its end");
  return q;
}

std::function<WorkerReply(std::string_view)> start_cpu_worker(const MeasureOptions& options) {
  auto worker = std::make_shared<CpuWorker>(options);
  return [worker](std::string_view message) { return worker->serve(message); };
}

}  // namespace yoloc::tuner
