#include <algorithm>

#include "codegen/cuda/cuda_compiler.h"
#include "tuner/cuda/cuda_tuning.h"

namespace yoloc::tuner {

double CudaTuneTask::estimated_seconds(double flops, uint64_t bytes) const {
  constexpr double kFlopsPerSecond = 50e12, kBytesPerSecond = 2e12, kLaunch = 4e-6;
  return kLaunch + std::max(flops / kFlopsPerSecond, static_cast<double>(bytes) / kBytesPerSecond);
}

TaskInfo task_info(const codegen::cuda::CudaTask& t) {
  TaskInfo info{t.group, t.group_name, t.template_name,  t.key,  t.flops,
                1,       t.space,      t.default_config, t.valid};
  info.twin_key = t.twin_key;
  return info;
}

std::vector<TuneTask> cuda_tuning_tasks(const Graph& g, int sm) {
  using codegen::cuda::CudaArg;
  std::vector<TuneTask> out;
  // Each group alone, then every back-to-back pair as an alternative to its two (merged by
  // key): compile fuses the pairs measured faster than their two kernels (B2bPolicy::kMeasured).
  std::vector<codegen::cuda::CudaTask> tasks = codegen::cuda::extract_cuda_tasks(g, sm);
  const size_t alone = tasks.size();
  for (codegen::cuda::CudaTask& t :
       codegen::cuda::extract_cuda_tasks(g, sm, codegen::cuda::B2bPolicy::all())) {
    if (t.second_group >= 0) tasks.push_back(std::move(t));
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    codegen::cuda::CudaTask& t = tasks[i];
    TuneTask tt;
    tt.task = task_info(t);
    tt.task.alternative = i >= alone;
    auto ct = std::make_shared<CudaTuneTask>();
    // The arguments are the same for every config: the default's tell their sizes.
    const codegen::cuda::CudaLowered l = t.lower(t.default_config, "probe");
    for (const CudaArg& a : l.args) {
      uint64_t elements = 0;
      if (a.kind == CudaArg::Kind::kActivation) {
        const uint64_t span =
            codegen::cuda::addressed_elements(codegen::cuda::cuda_operand_of(g, a.value));
        elements = static_cast<uint64_t>(a.element_offset) + span;
        tt.bytes += span * dtype_size(a.value->type.dtype);
      } else if (a.kind == CudaArg::Kind::kConstant) {
        tt.bytes += a.data.size();
      }
      ct->arg_elements.push_back(elements);
    }
    ct->task = std::move(t);
    tt.target_task = std::move(ct);
    merge_task(out, std::move(tt));
  }
  return out;
}

}  // namespace yoloc::tuner
