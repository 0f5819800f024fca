#include "tuner/cpu_tasks.h"

#include <algorithm>

namespace yoloc::tuner {

double CpuTuneTask::estimated_seconds(double flops, uint64_t bytes) const {
  constexpr double kFlopsPerSecond = 50e9, kBytesPerSecond = 10e9;
  return std::max(flops / kFlopsPerSecond, static_cast<double>(bytes) / kBytesPerSecond);
}

TaskInfo task_info(const codegen::cpu::CpuTask& t) {
  return TaskInfo{t.group, t.group_name,     t.template_name, t.key, t.flops,
                  t.batch, t.space,          t.default_config, t.valid};
}

std::vector<TuneTask> tuning_tasks(const Graph& g, codegen::cpu::CpuIsa isa) {
  std::vector<TuneTask> out;
  for (codegen::cpu::CpuTask& t : codegen::cpu::extract_cpu_tasks(g, isa)) {
    TuneTask tt;
    tt.task = task_info(t);
    for (const codegen::cpu::KernelArg& a : t.lower(t.default_config, "probe").args)
      tt.bytes += a.bytes * static_cast<uint64_t>(t.batch);
    auto own = std::make_shared<CpuTuneTask>();
    own->task = std::move(t);
    tt.target_task = std::move(own);
    merge_task(out, std::move(tt));
  }
  return out;
}

}  // namespace yoloc::tuner
