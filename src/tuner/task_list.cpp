#include "tuner/task_list.h"

#include <algorithm>
#include <map>

namespace yoloc::tuner {

std::vector<TuneTask> tuning_tasks(const Graph& g, codegen::cpu::CpuIsa isa) {
  std::vector<TuneTask> out;
  std::map<std::string, size_t> index;
  for (codegen::cpu::CpuTask& t : codegen::cpu::extract_cpu_tasks(g, isa)) {
    auto it = index.find(t.key);
    if (it != index.end()) {
      out[it->second].groups.push_back(t.group);
      continue;
    }
    TuneTask tt;
    tt.groups.push_back(t.group);
    for (const codegen::cpu::KernelArg& a : t.lower(t.default_config, "probe").args)
      tt.bytes += a.bytes * static_cast<uint64_t>(t.batch);
    tt.task = std::move(t);
    index[tt.task.key] = out.size();
    out.push_back(std::move(tt));
  }
  return out;
}

double estimated_seconds(const TuneTask& t) {
  // About what the default kernels reach on one AVX-512 core: 50 GFLOP/s in registers,
  // 10 GB/s from memory.
  constexpr double kFlopsPerSecond = 50e9, kBytesPerSecond = 10e9;
  return std::max(t.task.flops / kFlopsPerSecond, static_cast<double>(t.bytes) / kBytesPerSecond);
}

std::string task_label(const TuneTask& t, size_t width) {
  std::string s = t.key();
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

}  // namespace yoloc::tuner
