#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <condition_variable>
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>

#include "codegen/cuda/nvrtc_compiler.h"
#include "core/error.h"
#include "core/half.h"
#include "runtime/cuda/cuda_driver.h"
#include "tuner/cuda/cuda_tuning.h"
#include "tuner/isolate.h"
#include "tuner/measure_worker.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using codegen::cuda::CudaArg;
using codegen::cuda::CudaLowered;
using Clock = std::chrono::steady_clock;
namespace rt = runtime::cuda;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Shared memory for the reference outputs is laid out in blocks of this alignment.
constexpr uint64_t kAlign = 64;
uint64_t aligned(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

/// An element of a float storage dtype as a double; NaN for other dtypes (compared bytewise).
double element(const std::string& bytes, DType t, uint64_t i) {
  const char* p = bytes.data();
  switch (t) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p + i * 4, 4);
      return v;
    }
    case DType::kFloat16: {
      uint16_t b;
      std::memcpy(&b, p + i * 2, 2);
      return half_bits_to_float(b);
    }
    case DType::kBFloat16: {
      BFloat16 v;
      std::memcpy(&v.bits, p + i * 2, 2);
      return static_cast<float>(v);
    }
    default: return std::nan("");
  }
}

void set_element(std::string& bytes, DType t, uint64_t i, float v) {
  char* p = bytes.data();
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

bool float_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

/// What a task's candidates share: the random inputs and the reference outputs (host bytes, by
/// argument index).
struct TaskData {
  std::vector<std::string> inputs;
  std::vector<std::string> reference;
  bool has_reference = false;
  std::string reference_error;  // why the reference failed; empty while it has not
};

/// One candidate of a batch, lowered and built.
struct Candidate {
  ScheduleConfig config;
  CudaLowered lowered;
  std::string cubin;
  bool reference = false;
  std::string action;  // injected fault
};

/// The worker's device state (made in the worker only).
struct Device {
  std::unique_ptr<rt::Context> context;
  std::unique_ptr<rt::Stream> stream;
};

class CudaMeasurer : public Measurer {
 public:
  CudaMeasurer(const MeasureOptions& o, std::string arch, std::vector<int> devices)
      : opt_(o),
        arch_(std::move(arch)),
        devices_(std::move(devices)),
        injections_(parse_injections(o.inject)) {
    YOLOC_CHECK(!devices_.empty(), "tuner: a CUDA measurer without a device");
    codegen::cuda::parse_cuda_arch(arch_);
  }

  std::vector<MeasureResult> measure(const TuneTask& task,
                                     const std::vector<ScheduleConfig>& configs,
                                     double best_known_s) override;
  double build_seconds() const override { return build_s_; }
  double run_seconds() const override { return run_s_; }

 private:
  TaskData& data_of(const TuneTask& task, const CudaLowered& l);
  MeasureResult run_one(const TuneTask& task, TaskData& data, const Candidate& c, Device& dev,
                        double best_known_s, std::byte* shared_ref) const;
  /// Bytes of argument i's device buffer.
  static uint64_t arg_bytes(const CudaTuneTask& t, const CudaArg& a, size_t i) {
    return t.arg_elements[i] * dtype_size(a.value->type.dtype);
  }

  MeasureOptions opt_;
  std::string arch_;
  std::vector<int> devices_;  ///< the first measures the references
  std::vector<Injection> injections_;
  std::map<std::string, TaskData> tasks_;
  double build_s_ = 0, run_s_ = 0;
};

TaskData& CudaMeasurer::data_of(const TuneTask& task, const CudaLowered& l) {
  auto [it, fresh] = tasks_.try_emplace(task.key());
  TaskData& d = it->second;
  if (!fresh) return d;
  // Inputs in [-1, 1] from a fixed seed: every candidate of the task sees the same data.
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  d.inputs.resize(l.args.size());
  d.reference.resize(l.args.size());
  for (size_t i = 0; i < l.args.size(); ++i) {
    const CudaArg& a = l.args[i];
    if (a.kind != CudaArg::Kind::kActivation || a.output) continue;
    const DType t = a.value->type.dtype;
    const uint64_t n = task.cuda()->arg_elements[i];
    d.inputs[i].assign(n * dtype_size(t), '\0');  // other dtypes: zeros
    if (!float_dtype(t)) continue;
    for (uint64_t e = 0; e < n; ++e) set_element(d.inputs[i], t, e, dist(rng));
  }
  return d;
}

MeasureResult CudaMeasurer::run_one(const TuneTask& task, TaskData& data, const Candidate& c,
                                    Device& dev, double best_known_s,
                                    std::byte* shared_ref) const {
  MeasureResult r;
  if (!c.reference && !data.has_reference) {
    r.error = "no reference: the default config did not run";
    r.skipped = true;
    return r;
  }
  const CudaTuneTask& ct = *task.cuda();
  const CudaLowered& l = c.lowered;
  const rt::Module module(c.cubin);
  std::vector<CUfunction> fns;
  std::vector<rt::LaunchDims> dims;
  for (const codegen::cuda::CudaKernel& k : l.launches) {
    fns.push_back(module.function(k.symbol));
    if (k.shared_bytes > 48 * 1024)
      rt::set_max_dynamic_shared(fns.back(), static_cast<int>(k.shared_bytes));
    dims.push_back({k.grid, k.block, k.shared_bytes});
  }
  std::vector<rt::DeviceBuffer> bufs(l.args.size());
  std::vector<CUdeviceptr> values(l.args.size(), 0);
  for (size_t i = 0; i < l.args.size(); ++i) {
    const CudaArg& a = l.args[i];
    switch (a.kind) {
      case CudaArg::Kind::kNull: continue;
      case CudaArg::Kind::kScratch:
        bufs[i] = rt::DeviceBuffer(std::max<uint64_t>(l.scratch_bytes, 16));
        bufs[i].fill_bytes(0);
        break;
      case CudaArg::Kind::kConstant:
        bufs[i] = rt::DeviceBuffer(std::max<size_t>(a.data.size(), 16));
        if (!a.data.empty()) YOLOC_CU(cuMemcpyHtoD(bufs[i].ptr(), a.data.data(), a.data.size()));
        break;
      case CudaArg::Kind::kActivation: {
        const uint64_t bytes = arg_bytes(ct, a, i);
        bufs[i] = rt::DeviceBuffer(std::max<uint64_t>(bytes, 16));
        if (a.output) {
          bufs[i].fill_bytes(0xff);  // NaN in every float dtype: unwritten elements show
        } else if (bytes > 0) {
          YOLOC_CU(cuMemcpyHtoD(bufs[i].ptr(), data.inputs[i].data(), bytes));
        }
        break;
      }
    }
    values[i] = bufs[i].ptr();
  }
  std::vector<void*> params;
  for (CUdeviceptr& v : values) params.push_back(&v);

  if (c.action == "crash") std::raise(SIGSEGV);
  if (c.action == "hang")
    for (;;) pause();
  rt::Stream& stream = *dev.stream;
  const auto run = [&] {
    for (size_t k = 0; k < fns.size(); ++k) rt::launch(fns[k], dims[k], params.data(), &stream);
  };
  rt::Event start, stop;
  // Seconds of `runs` back-to-back runs (an illegal address surfaces here as a UserError).
  const auto timed = [&](int runs) {
    start.record(stream);
    for (int k = 0; k < runs; ++k) run();
    stop.record(stream);
    stop.synchronize();
    return static_cast<double>(stop.elapsed_ms_since(start)) * 1e-3;
  };
  const double first = timed(1);

  // The check against the reference (or, for the reference itself, keeping its outputs).
  uint64_t shared_off = 0;
  for (size_t i = 0; i < l.args.size(); ++i) {
    const CudaArg& a = l.args[i];
    if (a.kind != CudaArg::Kind::kActivation || !a.output) continue;
    const DType t = a.value->type.dtype;
    const uint64_t n = ct.arg_elements[i], bytes = arg_bytes(ct, a, i);
    std::string got(bytes, '\0');
    if (bytes > 0) YOLOC_CU(cuMemcpyDtoH(got.data(), bufs[i].ptr(), bytes));
    if (c.action == "wrong" && n > 0) {
      const uint64_t e = static_cast<uint64_t>(a.element_offset);
      if (float_dtype(t)) {
        const double v = element(got, t, e);
        set_element(got, t, e, std::isnan(v) ? 1.f : static_cast<float>(v) + 1.f);
      } else {
        got[e * dtype_size(t)] ^= 1;
      }
    }
    if (c.reference) {
      data.reference[i] = got;
      if (bytes > 0) std::memcpy(shared_ref + shared_off, got.data(), bytes);
      shared_off += aligned(bytes);
      continue;
    }
    const std::string& ref = data.reference[i];
    if (!float_dtype(t)) {
      if (got != ref) r.error = fmt::format("wrong output: argument {} differs from the default config's", i);
      if (!r.error.empty()) return r;
      continue;
    }
    const double rtol = t == DType::kFloat16    ? std::max(opt_.rtol, 1e-2)
                        : t == DType::kBFloat16 ? std::max(opt_.rtol, 5e-2)
                                                : opt_.rtol;
    const double atol = t == DType::kFloat16    ? std::max(opt_.atol, 1e-2)
                        : t == DType::kBFloat16 ? std::max(opt_.atol, 5e-2)
                                                : opt_.atol;
    for (uint64_t e = 0; e < n; ++e) {
      const double x = element(got, t, e), y = element(ref, t, e);
      if (x == y || (std::isnan(x) && std::isnan(y))) continue;  // also equal infinities
      if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) {
        r.error = fmt::format(
            "wrong output: argument {} element {} is {} where the default config computes {}", i,
            e, x, y);
        return r;
      }
    }
  }
  if (c.reference) data.has_reference = true;

  if (best_known_s > 0 && first > opt_.max_slowdown * best_known_s) {
    r.times = {first};
  } else {
    const double warm = std::max(timed(1), 1e-7);  // warm-up, also calibrates the runs per repeat
    const int number = static_cast<int>(std::clamp(std::ceil(opt_.min_repeat_s / warm), 1.0, 1e5));
    for (int rep = 0; rep < std::max(1, opt_.repeats); ++rep)
      r.times.push_back(timed(number) / number);
  }
  std::vector<double> sorted = r.times;
  std::sort(sorted.begin(), sorted.end());
  r.median = sorted[sorted.size() / 2];
  return r;
}

std::vector<MeasureResult> CudaMeasurer::measure(const TuneTask& task,
                                                 const std::vector<ScheduleConfig>& configs,
                                                 double best_known_s) {
  std::vector<MeasureResult> results(configs.size());
  if (configs.empty()) return results;
  YOLOC_CHECK(task.cuda(), "tuner: the CUDA measurer got the non-CUDA task {}", task.key());
  const CudaTuneTask& ct = *task.cuda();
  const codegen::cuda::CudaTask& t = ct.task;
  std::vector<Candidate> cands(configs.size());
  std::vector<bool> done(cands.size(), false);
  for (size_t i = 0; i < configs.size(); ++i) {
    Candidate& c = cands[i];
    c.config = configs[i];
    YOLOC_CHECK(t.valid(c.config), "tuner: config {} is not valid for {}", c.config.str(), t.key);
    c.lowered = t.lower(c.config, fmt::format("yc_c{}", i));
    YOLOC_CHECK(c.lowered.args.size() == ct.arg_elements.size(),
                "tuner: {} lowers to {} arguments with {}, {} with its default", t.key,
                c.lowered.args.size(), c.config.str(), ct.arg_elements.size());
    c.action = injected_action(injections_, t.template_name, c.config);
  }
  TaskData& data = data_of(task, cands[0].lowered);
  if (!data.reference_error.empty()) {
    for (MeasureResult& r : results) {
      r.error = "no reference: " + data.reference_error;
      r.skipped = true;
    }
    return results;
  }
  if (!data.has_reference) {
    YOLOC_CHECK(configs[0] == t.default_config,
                "tuner: the first candidates of {} must start with its default config", t.key);
    cands[0].reference = true;
  }

  // NVRTC builds, in parallel, in a child process: a process that has run NVRTC can no longer
  // start CUDA in the children it forks (cuInit fails there with CUDA_ERROR_NOT_INITIALIZED, as
  // seen on an H200 with CUDA 13), and the measurement workers are such children. The child
  // sends back each candidate's cubin or error, length-prefixed.
  const auto t0 = Clock::now();
  std::string build_error;
  const auto built = run_isolated(
      [&] {
        std::vector<std::string> cubins(cands.size()), errors(cands.size());
        parallel_for_each(cands.size(), std::max(1, opt_.build_jobs), [&](size_t i) {
          if (done[i]) return;
          try {
            codegen::cuda::NvrtcOptions o;
            o.arch = arch_;
            o.toolkit_headers = false;
            cubins[i] = codegen::cuda::nvrtc_compile(cands[i].lowered.source,
                                                     fmt::format("yc_c{}", i), o)
                            .cubin;
          } catch (const std::exception& e) {
            errors[i] = first_lines(e.what());
          }
        });
        std::string out;
        for (size_t i = 0; i < cands.size(); ++i) {
          const std::string& item = errors[i].empty() ? cubins[i] : errors[i];
          out += errors[i].empty() ? 'C' : 'E';
          const uint64_t n = item.size();
          out.append(reinterpret_cast<const char*>(&n), sizeof n);
          out += item;
        }
        return out;
      },
      std::max(60.0, 10.0 * static_cast<double>(cands.size())), build_error);
  size_t pos = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    uint64_t n = 0;
    const bool ok = built && pos + 1 + sizeof n <= built->size();
    if (ok) std::memcpy(&n, built->data() + pos + 1, sizeof n);
    if (!ok || pos + 1 + sizeof n + n > built->size()) {
      if (!done[i]) {
        results[i].error = "build failed: " + (built ? std::string("truncated build output") : build_error);
        done[i] = true;
      }
      continue;
    }
    const char kind = (*built)[pos];
    std::string item = built->substr(pos + 1 + sizeof n, n);
    pos += 1 + sizeof n + n;
    if (done[i]) continue;
    if (kind == 'C') {
      cands[i].cubin = std::move(item);
    } else {
      results[i].error = "build failed: " + item;
      done[i] = true;
    }
  }
  build_s_ += since(t0);

  // The reference outputs come back through shared memory.
  uint64_t ref_bytes = 0;
  for (size_t i = 0; i < ct.arg_elements.size(); ++i) {
    const CudaArg& a = cands[0].lowered.args[i];
    if (a.kind == CudaArg::Kind::kActivation && a.output) ref_bytes += aligned(arg_bytes(ct, a, i));
  }
  SharedMemory shared(ref_bytes);
  // The workers of one device: `mine` marks its candidates; `on_reference` is called when the
  // reference's result is in; the fatal setup error comes back.
  const auto run_on = [&](int device, const std::vector<bool>& mine,
                          std::vector<MeasureResult>& out, std::vector<bool>& out_done,
                          const std::function<void()>& on_reference) {
    out.assign(cands.size(), MeasureResult{});
    out_done.assign(cands.size(), true);
    for (size_t i = 0; i < cands.size(); ++i) out_done[i] = done[i] || !mine[i];
    Device dev;  // made in the worker
    WorkerSpec spec;
    spec.timeout_s = opt_.timeout_s;
    spec.stop_after_exception = true;  // a failed CUDA call may have left the context unusable
    spec.setup = [&] {
      dev.context = std::make_unique<rt::Context>(device);
      dev.stream = std::make_unique<rt::Stream>();
    };
    spec.run = [&](size_t i) {
      return run_one(task, data, cands[i], dev, best_known_s, shared.data());
    };
    spec.on_result = [&](size_t i, const MeasureResult& r) {
      if (!cands[i].reference) return;
      if (!r.error.empty()) {
        if (on_reference) on_reference();
        return;
      }
      // Keep the reference for later workers of this task.
      uint64_t off = 0;
      for (size_t a = 0; a < ct.arg_elements.size(); ++a) {
        const CudaArg& arg = cands[i].lowered.args[a];
        if (arg.kind != CudaArg::Kind::kActivation || !arg.output) continue;
        const uint64_t bytes = arg_bytes(ct, arg, a);
        data.reference[a].assign(reinterpret_cast<const char*>(shared.data() + off), bytes);
        off += aligned(bytes);
      }
      data.has_reference = true;
      if (on_reference) on_reference();
    };
    return run_workers(out, out_done, spec, [&](size_t i) {
      return data.has_reference || cands[i].reference;
    });
  };
  const auto t1 = Clock::now();
  // The not-done candidates round-robin over the devices, one thread (and worker) each. While the
  // task has no reference, the first device runs it first (index 0 is its first candidate) and the
  // others wait until its result is in: their candidates are checked against it.
  const size_t nd = devices_.size();
  std::vector<std::vector<bool>> mine(nd, std::vector<bool>(cands.size(), false));
  for (size_t i = 0, k = 0; i < cands.size(); ++i)
    if (!done[i]) mine[k++ % nd][i] = true;
  std::mutex mutex;
  std::condition_variable settled_cv;
  bool settled = data.has_reference;
  const auto settle = [&] {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      settled = true;
    }
    settled_cv.notify_all();
  };
  std::vector<std::vector<MeasureResult>> out(nd);
  std::vector<std::vector<bool>> out_done(nd);
  std::vector<std::string> fatal(nd);
  std::vector<std::exception_ptr> raised(nd);
  const auto work = [&](size_t d) {
    try {
      if (d > 0) {
        std::unique_lock<std::mutex> lock(mutex);
        settled_cv.wait(lock, [&] { return settled; });
      }
      fatal[d] = run_on(devices_[d], mine[d], out[d], out_done[d],
                        d == 0 ? std::function<void()>(settle) : nullptr);
    } catch (...) {
      raised[d] = std::current_exception();
    }
    if (d == 0) settle();  // also when the reference never came
  };
  bool first_ran = false;
  const auto work_first = [&] {
    if (!first_ran) work(0);
    first_ran = true;
  };
  std::vector<std::thread> threads;
  for (size_t d = 1; d < nd; ++d) {
    try {
      threads.emplace_back(work, d);
    } catch (const std::system_error&) {
      work_first();  // no thread to be had: this device's share after the first device's
      work(d);
    }
  }
  work_first();
  for (std::thread& th : threads) th.join();
  for (size_t d = 0; d < nd; ++d) {
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!mine[d][i] || out_done[d].empty() || !out_done[d][i]) continue;
      results[i] = std::move(out[d][i]);
      done[i] = true;
    }
  }
  run_s_ += since(t1);
  for (const std::exception_ptr& e : raised)
    if (e) std::rethrow_exception(e);
  for (size_t d = 0; d < nd; ++d)
    if (!fatal[d].empty())
      user_error("the CUDA measurement worker on device {} failed: {}", devices_[d], fatal[d]);

  if (cands[0].reference && !results[0].ok())
    data.reference_error = "the default config failed (" + results[0].error + ")";
  for (size_t i = 0; i < cands.size(); ++i) {
    if (done[i]) continue;
    results[i].error = data.reference_error.empty()
                           ? "not run: the measurement worker stopped before it"
                           : "no reference: " + data.reference_error;
    results[i].skipped = true;
  }
  return results;
}

}  // namespace

TuneTarget cuda_target(const std::vector<int>& devices, const std::string& arch) {
  YOLOC_CHECK(!devices.empty(), "cuda_target: no device");
  std::string error;
  const auto out = run_isolated(
      [&devices] {
        nlohmann::json all = nlohmann::json::array();
        for (const int id : devices) {
          try {
            const rt::Context ctx(id);
            all.push_back({{"name", ctx.info().name}, {"arch", ctx.info().arch()}});
          } catch (const std::exception& e) {
            if (devices.size() == 1) throw;
            throw std::runtime_error(fmt::format("device {}: {}", id, e.what()));
          }
        }
        return all.dump();
      },
      60, error);
  const std::string list = fmt::format("{}", fmt::join(devices, ","));
  if (!out)
    user_error("--target cuda: cannot use CUDA device{} {}: {}", devices.size() > 1 ? "s" : "",
               list, error);
  const nlohmann::json j = nlohmann::json::parse(*out, nullptr, false);
  const auto well_formed = [](const nlohmann::json& d) {
    return d.is_object() && d.contains("name") && d["name"].is_string() && d.contains("arch") &&
           d["arch"].is_string();
  };
  if (j.is_discarded() || !j.is_array() || j.size() != devices.size() ||
      !std::all_of(j.begin(), j.end(), well_formed))
    user_error("--target cuda: the query of CUDA device {} answered '{}'", list, *out);
  const auto kind = [&](size_t k) {
    return fmt::format("{} ({})", j[k]["name"].get<std::string>(), j[k]["arch"].get<std::string>());
  };
  for (size_t k = 1; k < devices.size(); ++k) {
    if (kind(k) != kind(0))
      user_error("--devices {}: device {} is {}, device {} is {}; tune on devices of one kind", list,
                 devices[k], kind(k), devices[0], kind(0));
  }
  TuneTarget t;
  t.kind = "cuda";
  t.device = j[0]["name"].get<std::string>();
  t.device_id = devices[0];
  const std::string own = j[0]["arch"].get<std::string>();
  t.arch = arch.empty() ? own : arch;
  // A cubin runs on its own major version at its minor version or later.
  const int want = codegen::cuda::parse_cuda_arch(t.arch), have = codegen::cuda::parse_cuda_arch(own);
  if (want / 10 != have / 10 || want > have)
    user_error("--arch {}: device {} ({}) is {} and cannot run {} kernels; pass --arch {}", t.arch,
               devices[0], t.device, own, t.arch, own);
  return t;
}

TuneTarget cuda_target(int device_id, const std::string& arch) {
  return cuda_target(std::vector<int>{device_id}, arch);
}

std::unique_ptr<Measurer> make_cuda_measurer(const MeasureOptions& options, const std::string& arch,
                                             std::vector<int> devices) {
  return std::make_unique<CudaMeasurer>(options, arch, std::move(devices));
}

}  // namespace yoloc::tuner
