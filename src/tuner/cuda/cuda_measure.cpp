#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "codegen/cuda/nvrtc_compiler.h"
#include "core/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "tuner/cuda/cuda_tuning.h"
#include "tuner/cuda/cuda_worker.h"
#include "tuner/isolate.h"
#include "tuner/measure_common.h"
#include "tuner/worker_pool.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using codegen::cuda::CudaArg;
using codegen::cuda::CudaLowered;
namespace rt = runtime::cuda;

/// What this process knows of a task (its inputs and reference outputs live in the workers).
using TaskData = TaskReference;

/// One candidate of a batch, lowered and built.
struct Candidate {
  ScheduleConfig config;
  CudaLowered lowered;
  std::shared_ptr<const std::string> cubin;
  bool reference = false;
  std::string action;  // injected fault
};

/// A batch of candidates, lowered and built (done[i]: candidate i did not build, results[i]
/// says why).
struct CudaBatch : BuiltBatch {
  const TuneTask* task = nullptr;
  std::vector<Candidate> cands;
  std::vector<MeasureResult> results;
  std::vector<bool> done;
};

std::vector<WorkerSpec> cuda_worker_specs(const MeasureOptions& o,
                                          const std::vector<int>& devices) {
  std::vector<WorkerSpec> specs;
  for (const int device : devices) {
    WorkerSpec spec;
    spec.timeout_s = o.timeout_s;
    spec.stop_after_exception = true;  // a failed CUDA call may have left the context unusable
    spec.start = [device, o] { return start_cuda_worker(device, o); };
    specs.push_back(std::move(spec));
  }
  return specs;
}

class CudaMeasurer : public Measurer {
 public:
  CudaMeasurer(const MeasureOptions& o, std::string arch, std::vector<int> devices)
      : Measurer(o.build_jobs),
        opt_(o),
        arch_(std::move(arch)),
        devices_(std::move(devices)),
        injections_(parse_injections(o.inject)),
        pool_(cuda_worker_specs(o, devices_)) {
    YOLOC_CHECK(!devices_.empty(), "tuner: a CUDA measurer without a device");
    codegen::cuda::parse_cuda_arch(arch_);
  }

  int worker_starts() const override { return pool_.starts(); }

 protected:
  std::unique_ptr<BuiltBatch> build_batch(const TuneTask& task,
                                          const std::vector<ScheduleConfig>& configs,
                                          BuildJobs& jobs) override;
  std::vector<MeasureResult> run_batch(BuiltBatch& built, double best_known_s) override;

 private:
  /// NVRTC builds of the candidates not done, in parallel, in a child process: a process that
  /// has run NVRTC can no longer start CUDA in the children it forks (cuInit fails there with
  /// CUDA_ERROR_NOT_INITIALIZED, as seen on an H200 with CUDA 13), and the measurement workers
  /// are such children. Sets each one's cubin, or its error.
  void build(std::vector<Candidate>& cands, std::vector<MeasureResult>& results,
             std::vector<bool>& done, BuildJobs& jobs);
  /// The request that carries `c` to a worker.
  static std::string request(const TuneTask& task, const Candidate& c, MeasureRole role,
                             double best_known_s);

  MeasureOptions opt_;
  std::string arch_;
  std::vector<int> devices_;
  std::vector<Injection> injections_;
  std::map<std::string, TaskData> tasks_;  // of run_batch only
  WorkerPool pool_;                        // one worker per device
};

void CudaMeasurer::build(std::vector<Candidate>& cands, std::vector<MeasureResult>& results,
                         std::vector<bool>& done, BuildJobs& jobs) {
  // The child sends back each candidate's cubin or error, length-prefixed. Its NVRTC threads
  // and those of the other builds running at once are build_jobs in all.
  const JobLease lease = jobs.lease(static_cast<int>(std::count(done.begin(), done.end(), false)));
  std::string build_error;
  const auto built = run_isolated(
      [&] {
        std::vector<std::string> cubins(cands.size()), errors(cands.size());
        parallel_for_each(cands.size(), lease.count(), [&](size_t i) {
          if (done[i]) return;
          try {
            codegen::cuda::NvrtcOptions o;
            o.arch = arch_;
            o.toolkit_headers = false;
            cubins[i] =
                codegen::cuda::nvrtc_compile(cands[i].lowered.source, fmt::format("yc_c{}", i), o)
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
        results[i].error =
            "build failed: " + (built ? std::string("truncated build output") : build_error);
        done[i] = true;
      }
      continue;
    }
    const char kind = (*built)[pos];
    std::string item = built->substr(pos + 1 + sizeof n, n);
    pos += 1 + sizeof n + n;
    if (done[i]) continue;
    if (kind == 'C') {
      cands[i].cubin = std::make_shared<const std::string>(std::move(item));
    } else {
      results[i].error = "build failed: " + item;
      done[i] = true;
    }
  }
}

std::string CudaMeasurer::request(const TuneTask& task, const Candidate& c, MeasureRole role,
                                  double best_known_s) {
  const CudaTuneTask& ct = *task.as<CudaTuneTask>();
  CudaRequest q;
  q.role = role;
  q.task = task.key();
  for (size_t i = 0; i < c.lowered.args.size(); ++i) {
    const CudaArg& a = c.lowered.args[i];
    CudaRequest::Arg& arg = q.args.emplace_back();
    arg.kind = a.kind;
    arg.output = a.output;
    if (a.kind == CudaArg::Kind::kActivation) {
      arg.dtype = a.value->type.dtype;
      arg.elements = ct.arg_elements[i];
      arg.element_offset = a.element_offset;
    }
    arg.data = a.data;
  }
  q.scratch_bytes = c.lowered.scratch_bytes;
  for (const codegen::cuda::CudaKernel& k : c.lowered.launches)
    q.launches.push_back({k.symbol, k.grid, k.block, k.shared_bytes, k.persistent});
  q.cubin = c.cubin;
  q.action = c.action;
  q.best_known_s = best_known_s;
  return encode_cuda_request(q);
}

std::unique_ptr<BuiltBatch> CudaMeasurer::build_batch(const TuneTask& task,
                                                      const std::vector<ScheduleConfig>& configs,
                                                      BuildJobs& jobs) {
  auto b = std::make_unique<CudaBatch>();
  b->task = &task;
  b->results.resize(configs.size());
  b->done.assign(configs.size(), false);
  if (configs.empty()) return b;
  YOLOC_CHECK(task.as<CudaTuneTask>(), "tuner: the CUDA measurer got the non-CUDA task {}", task.key());
  const CudaTuneTask& ct = *task.as<CudaTuneTask>();
  const codegen::cuda::CudaTask& t = ct.task;
  std::vector<Candidate>& cands = b->cands;
  cands.resize(configs.size());
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
  build(cands, b->results, b->done, jobs);
  return b;
}

std::vector<MeasureResult> CudaMeasurer::run_batch(BuiltBatch& built, double best_known_s) {
  CudaBatch& b = dynamic_cast<CudaBatch&>(built);
  std::vector<MeasureResult> results = std::move(b.results);
  if (b.cands.empty()) return results;
  const TuneTask& task = *b.task;
  const codegen::cuda::CudaTask& t = task.as<CudaTuneTask>()->task;
  std::vector<Candidate>& cands = b.cands;
  std::vector<bool>& done = b.done;
  std::vector<ScheduleConfig> configs;
  for (const Candidate& c : cands) configs.push_back(c.config);
  TaskData& data = tasks_[task.key()];
  if (!data.start_batch(configs, t.default_config, t.key, results, &cands[0].reference))
    return results;

  // A reference that did not build: nothing of the task can be checked (the others are left
  // not done, "no reference" below).
  std::vector<std::string> fatal(devices_.size());
  if (!cands[0].reference || !done[0]) {
    // The devices take the candidates one by one, each checking against its own worker's run of
    // the reference: no device waits for another.
    WorkerBatch batch;
    for (size_t i = 0; i < cands.size(); ++i) {
      const MeasureRole role =
          cands[i].reference ? MeasureRole::kReference : MeasureRole::kCandidate;
      batch.requests.push_back(done[i] ? std::string()
                                       : request(task, cands[i], role, best_known_s));
    }
    if (cands[0].reference) {
      batch.reference = 0;
      data.reference_request = request(task, cands[0], MeasureRole::kReferenceOnly, 0);
    }
    batch.reference_request = data.reference_request;
    batch.deadline = deadline();
    fatal = pool_.run(batch, results, done);
  }
  for (size_t d = 0; d < devices_.size(); ++d)
    if (!fatal[d].empty())
      user_error("the CUDA measurement worker on device {} failed: {}", devices_[d], fatal[d]);

  data.end_batch(cands[0].reference, done, results);
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
      user_error("--devices {}: device {} is {}, device {} is {}; tune on devices of one kind",
                 list, devices[k], kind(k), devices[0], kind(0));
  }
  TuneTarget t;
  t.kind = "cuda";
  t.device = j[0]["name"].get<std::string>();
  t.device_id = devices[0];
  const std::string own = j[0]["arch"].get<std::string>();
  t.arch = arch.empty() ? own : arch;
  // A cubin runs on its own major version at its minor version or later.
  const int want = codegen::cuda::parse_cuda_arch(t.arch),
            have = codegen::cuda::parse_cuda_arch(own);
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
