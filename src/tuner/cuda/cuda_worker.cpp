#include "tuner/cuda/cuda_worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "codegen/cuda/conv_task.h"
#include "core/error.h"
#include "yoloc/half.h"
#include "runtime/cuda/cuda_driver.h"
#include "tuner/cuda/output_check.h"

namespace yoloc::tuner {
namespace {

using codegen::cuda::CudaArg;
namespace rt = runtime::cuda;

/// The activation bytes (each on the device and again page-locked on the host) of the tasks a
/// worker keeps; the least recently used go first. A task dropped costs its inputs' generation
/// and a reference run when it comes back (as the task scheduler comes back to every task), so
/// the cache is sized to hold every task of a model's tuning run, not a count of tasks.
constexpr uint64_t kCachedBytes = uint64_t{8} << 30;

void set_element(char* p, DType t, uint64_t i, float v) {
  if (t == DType::kFloat32) {
    std::memcpy(p + i * 4, &v, 4);
  } else if (t == DType::kFloat16) {
    const uint16_t b = float_to_half_bits(v);
    std::memcpy(p + i * 2, &b, 2);
  } else if (t == DType::kBFloat16) {
    const BFloat16 h(v);
    std::memcpy(p + i * 2, &h.bits, 2);
  }
}

uint64_t arg_bytes(const CudaRequest::Arg& a) { return a.elements * dtype_size(a.dtype); }

class CudaWorker {
 public:
  CudaWorker(int device, const MeasureOptions& o) : opt_(o), context_(device) {}
  WorkerReply serve(std::string_view message);

 private:
  /// What the candidates of a task share in this worker: the random inputs (page-locked host
  /// bytes, copied in again for each candidate at the bus's speed), a device buffer per
  /// activation, and the reference outputs (host bytes), by argument index.
  struct TaskState {
    std::vector<std::unique_ptr<rt::HostBuffer>> inputs;
    std::vector<std::string> reference;
    std::vector<double> reference_max;  // largest_magnitude of each reference output
    std::vector<rt::DeviceBuffer> activations;
    bool has_reference = false;
    uint64_t used = 0, bytes = 0;
  };
  TaskState& task_state(const CudaRequest& q);
  MeasureResult run(const CudaRequest& q, TaskState& t);

  /// Page-locked room for `bytes` of a candidate's output, read back for the check.
  char* output_room(uint64_t bytes);

  MeasureOptions opt_;
  rt::Context context_;  // first: the buffers and the stream go before it
  rt::Stream stream_;
  std::unique_ptr<rt::HostBuffer> output_;
  std::map<std::string, TaskState> tasks_;
  uint64_t tick_ = 0;
};

CudaWorker::TaskState& CudaWorker::task_state(const CudaRequest& q) {
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
    t.reference_max.assign(q.args.size(), 0.0);
    t.activations.resize(q.args.size());
    for (size_t i = 0; i < q.args.size(); ++i) {
      const CudaRequest::Arg& a = q.args[i];
      if (a.kind != CudaArg::Kind::kActivation) continue;
      t.activations[i] = rt::DeviceBuffer(std::max<uint64_t>(arg_bytes(a), 16));
      t.bytes += arg_bytes(a);
      if (a.output) continue;
      t.inputs[i] = std::make_unique<rt::HostBuffer>(arg_bytes(a));
      char* in = static_cast<char*>(t.inputs[i]->data());
      std::memset(in, 0, arg_bytes(a));  // other dtypes: zeros
      if (!codegen::cuda::is_storage_dtype(a.dtype)) continue;
      for (uint64_t e = 0; e < a.elements; ++e) set_element(in, a.dtype, e, dist(rng));
    }
  }
  // The arguments of a workload are the same for every config.
  YOLOC_CHECK(t.activations.size() == q.args.size(), "tuner: {} arguments of {}, {} before",
              q.args.size(), q.task, t.activations.size());
  for (size_t i = 0; i < q.args.size(); ++i) {
    const CudaRequest::Arg& a = q.args[i];
    if (a.kind == CudaArg::Kind::kActivation)
      YOLOC_CHECK(t.activations[i].bytes() == std::max<uint64_t>(arg_bytes(a), 16),
                  "tuner: argument {} of {} changed size", i, q.task);
  }
  evict_lru(tasks_, [&] {
    uint64_t cached = 0;
    for (const auto& [key, state] : tasks_) cached += state.bytes;
    return cached > kCachedBytes;
  });
  return t;
}

char* CudaWorker::output_room(uint64_t bytes) {
  if (!output_ || output_->bytes() < bytes)
    output_ = std::make_unique<rt::HostBuffer>(std::max<uint64_t>(bytes, 16));
  return static_cast<char*>(output_->data());
}

WorkerReply CudaWorker::serve(std::string_view message) {
  const CudaRequest q = decode_cuda_request(message);
  TaskState& t = task_state(q);
  return serve_request(q, t, [&] { return run(q, t); });
}

MeasureResult CudaWorker::run(const CudaRequest& q, TaskState& t) {
  MeasureResult r;
  const bool reference = q.role != MeasureRole::kCandidate;
  const rt::Module module(*q.cubin);
  std::vector<CUfunction> fns;
  std::vector<rt::LaunchDims> dims;
  for (const CudaRequest::Launch& k : q.launches) {
    fns.push_back(module.function(k.symbol));
    if (k.shared_bytes > 48 * 1024)
      rt::set_max_dynamic_shared(fns.back(), static_cast<int>(k.shared_bytes));
    dims.push_back(
        rt::fit_to_device(fns.back(), {k.grid, k.block, k.shared_bytes, false, k.persistent}));
  }
  // Constants (their layout depends on the config) and scratch are the candidate's own; the
  // activations' buffers are the task's, the inputs copied in again (a candidate that wrote
  // past its outputs would otherwise change the next one's inputs).
  std::vector<rt::DeviceBuffer> own(q.args.size());
  std::vector<CUdeviceptr> values(q.args.size(), 0);
  for (size_t i = 0; i < q.args.size(); ++i) {
    const CudaRequest::Arg& a = q.args[i];
    switch (a.kind) {
      case CudaArg::Kind::kNull: continue;
      case CudaArg::Kind::kScratch:
        own[i] = rt::DeviceBuffer(std::max<uint64_t>(q.scratch_bytes, 16));
        own[i].fill_bytes(0);
        values[i] = own[i].ptr();
        continue;
      case CudaArg::Kind::kConstant:
        own[i] = rt::DeviceBuffer(std::max<size_t>(a.data.size(), 16));
        if (!a.data.empty()) YOLOC_CU(cuMemcpyHtoD(own[i].ptr(), a.data.data(), a.data.size()));
        values[i] = own[i].ptr();
        continue;
      case CudaArg::Kind::kActivation: {
        rt::DeviceBuffer& b = t.activations[i];
        if (a.output) {
          b.fill_bytes(0xff);  // NaN in every float dtype: unwritten elements show
        } else if (arg_bytes(a) > 0) {
          YOLOC_CU(cuMemcpyHtoD(b.ptr(), t.inputs[i]->data(), arg_bytes(a)));
        }
        values[i] = b.ptr();
        continue;
      }
    }
  }
  std::vector<void*> params;
  for (CUdeviceptr& v : values) params.push_back(&v);

  if (q.action == "crash") std::raise(SIGSEGV);
  if (q.action == "hang")
    for (;;) pause();
  const auto run_once = [&] {
    for (size_t k = 0; k < fns.size(); ++k) rt::launch(fns[k], dims[k], params.data(), &stream_);
  };
  rt::Event start, stop;
  // Seconds of `runs` back-to-back runs (an illegal address surfaces here as a UserError).
  const auto timed = [&](int runs) {
    start.record(stream_);
    for (int k = 0; k < runs; ++k) run_once();
    stop.record(stream_);
    stop.synchronize();
    return static_cast<double>(stop.elapsed_ms_since(start)) * 1e-3;
  };
  const double first = timed(1);

  // The check against the reference (or, for the reference itself, keeping its outputs).
  for (size_t i = 0; i < q.args.size(); ++i) {
    const CudaRequest::Arg& a = q.args[i];
    if (a.kind != CudaArg::Kind::kActivation || !a.output) continue;
    const DType dt = a.dtype;
    const uint64_t n = a.elements, bytes = arg_bytes(a);
    char* got = output_room(bytes);
    if (bytes > 0) YOLOC_CU(cuMemcpyDtoH(got, t.activations[i].ptr(), bytes));
    if (q.action == "wrong" && n > 0) {
      const auto e = static_cast<uint64_t>(a.element_offset);
      if (codegen::cuda::is_storage_dtype(dt)) {
        const double v = stored_element(got, dt, e);
        set_element(got, dt, e, std::isnan(v) ? 1.f : static_cast<float>(v) + 1.f);
      } else {
        got[e * dtype_size(dt)] ^= 1;
      }
    }
    if (reference) {
      t.reference[i].assign(got, bytes);
      // The check's range term (output_check.h), for 16-bit outputs only.
      if (dt == DType::kFloat16 || dt == DType::kBFloat16)
        t.reference_max[i] = largest_magnitude(got, dt, n);
      continue;
    }
    const char* ref = t.reference[i].data();
    const double rtol = dt == DType::kFloat16    ? std::max(opt_.rtol, 1e-2)
                        : dt == DType::kBFloat16 ? std::max(opt_.rtol, 5e-2)
                                                 : opt_.rtol;
    const double atol = dt == DType::kFloat16    ? std::max(opt_.atol, 1e-2)
                        : dt == DType::kBFloat16 ? std::max(opt_.atol, 5e-2)
                                                 : opt_.atol;
    const std::string off = output_mismatch(got, ref, n, dt, atol, rtol, t.reference_max[i]);
    if (!off.empty()) {
      r.error = fmt::format("wrong output: argument {} {}", i, off);
      return r;
    }
  }
  if (reference) t.has_reference = true;

  if (q.role == MeasureRole::kReferenceOnly ||
      (q.best_known_s > 0 && first > opt_.max_slowdown * q.best_known_s)) {
    r.times = {first};
  } else {
    const double warm = std::max(timed(1), 1e-7);  // warm-up, also calibrates the runs per repeat
    const int number = static_cast<int>(std::clamp(std::ceil(opt_.min_repeat_s / warm), 1.0, 1e5));
    for (int rep = 0; rep < std::max(1, opt_.repeats); ++rep)
      r.times.push_back(timed(number) / number);
  }
  r.set_median();
  return r;
}

}  // namespace

std::string encode_cuda_request(const CudaRequest& q) {
  ByteWriter w;
  w.u8(static_cast<uint8_t>(q.role));
  w.bytes(q.task);
  w.u64(q.args.size());
  for (const CudaRequest::Arg& a : q.args) {
    w.u8(static_cast<uint8_t>(a.kind));
    w.boolean(a.output);
    w.u8(static_cast<uint8_t>(a.dtype));
    w.u64(a.elements);
    w.i64(a.element_offset);
    w.bytes(a.data);
  }
  w.u64(q.scratch_bytes);
  w.u64(q.launches.size());
  for (const CudaRequest::Launch& l : q.launches) {
    w.bytes(l.symbol);
    for (unsigned v : l.grid) w.u64(v);
    for (unsigned v : l.block) w.u64(v);
    w.u64(l.shared_bytes);
    w.boolean(l.persistent);
  }
  w.bytes(q.cubin ? std::string_view(*q.cubin) : std::string_view());
  w.bytes(q.action);
  w.f64(q.best_known_s);
  return w.take();
}

CudaRequest decode_cuda_request(std::string_view message) {
  ByteReader r(message);
  CudaRequest q;
  q.role = measure_role(r.u8());
  q.task = std::string(r.bytes());
  const uint64_t n = r.u64();
  if (n > message.size()) throw MalformedMessage("a request with too many arguments");
  q.args.resize(n);
  for (CudaRequest::Arg& a : q.args) {
    const uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(CudaArg::Kind::kNull))
      throw MalformedMessage("an argument of an unknown kind");
    a.kind = static_cast<CudaArg::Kind>(kind);
    a.output = r.boolean();
    const uint8_t dtype = r.u8();
    if (dtype > static_cast<uint8_t>(DType::kBool))
      throw MalformedMessage("an argument of an unknown dtype");
    a.dtype = static_cast<DType>(dtype);
    a.elements = r.u64();
    a.element_offset = r.i64();
    a.data = std::string(r.bytes());
  }
  q.scratch_bytes = r.u64();
  const uint64_t launches = r.u64();
  if (launches > message.size()) throw MalformedMessage("a request with too many launches");
  q.launches.resize(launches);
  const auto dim = [&r] {
    const uint64_t v = r.u64();
    if (v > 0xffffffffu) throw MalformedMessage("a launch dimension out of range");
    return static_cast<unsigned>(v);
  };
  for (CudaRequest::Launch& l : q.launches) {
    l.symbol = std::string(r.bytes());
    for (unsigned& v : l.grid) v = dim();
    for (unsigned& v : l.block) v = dim();
    l.shared_bytes = dim();
    l.persistent = r.boolean();
  }
  q.cubin = std::make_shared<const std::string>(r.bytes());
  q.action = std::string(r.bytes());
  q.best_known_s = r.f64();
  if (!r.done()) throw MalformedMessage("a request with bytes after its end");
  return q;
}

std::function<WorkerReply(std::string_view)> start_cuda_worker(int device,
                                                               const MeasureOptions& options) {
  auto worker = std::make_shared<CudaWorker>(device, options);
  return [worker](std::string_view message) { return worker->serve(message); };
}

}  // namespace yoloc::tuner
