#pragma once
/// Task extraction for the OpenCL target: every kernel group of an optimized graph (target
/// "opencl": plain NCHW activations) becomes a ClTask served by the first template that takes
/// it: the tiled implicit-GEMM conv, the depthwise conv, else the generic IR-driven template
/// (which takes every group of the supported ops).
#include <functional>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "codegen/opencl/cl_kernel.h"
#include "codegen/opencl/generic_template.h"
#include "ir/graph.h"

namespace yoloc::codegen::opencl {

struct ClTask {
  int group = -1;
  std::string group_name;
  std::string template_name;  ///< "conv", "dwconv", "generic"
  std::string key;            ///< workload key (shared by identical workloads)
  double flops = 0;
  ScheduleSpace space;
  ScheduleConfig default_config;
  std::function<bool(const ScheduleConfig&)> valid;
  /// The kernels for a valid config, their symbols starting with `prefix`.
  std::function<ClLowered(const ScheduleConfig&, const std::string& prefix)> lower;
};

/// The tasks of `g` in run order. Raises a UserError naming the group, its ops and the reason
/// when no template takes a group.
std::vector<ClTask> extract_opencl_tasks(const Graph& g, const StridesOf& strides_of);

}  // namespace yoloc::codegen::opencl
