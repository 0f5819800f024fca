#include "codegen/opencl/tasks.h"

#include <fmt/format.h>

#include "codegen/cpu/emit_util.h"
#include "codegen/opencl/conv_template.h"
#include "codegen/opencl/dwconv_template.h"

namespace yoloc::codegen::opencl {
namespace {

template <class T, class Workload>
void set_space(ClTask& task, const Workload& t) {
  task.space = T::space(t);
  task.default_config = T::default_config(t);
  task.valid = [t](const ScheduleConfig& c) { return T::valid(t, c); };
  task.lower = [t](const ScheduleConfig& c, const std::string& prefix) {
    return T::emit(t, c, prefix);
  };
}

double output_elements(const Graph& g, const FusedGroup& grp) {
  double n = 0;
  for (const Value* v : cpu::group_io(g, grp).outputs)
    n += static_cast<double>(shape_numel(v->type.static_shape()));
  return n;
}

}  // namespace

std::vector<ClTask> extract_opencl_tasks(const Graph& g, const StridesOf& strides_of) {
  std::vector<ClTask> tasks;
  for (const FusedGroup* group : g.kernel_groups_in_run_order()) {
    const FusedGroup& grp = *group;
    ClTask task;
    const auto conv = conv_task_of(g, grp, strides_of);
    if (conv && ConvTemplate::matches(*conv)) {
      task.template_name = "conv";
      task.key = conv->key();
      task.flops = conv->conv.flops();
      set_space<ConvTemplate>(task, *conv);
    } else if (conv && DwConvTemplate::matches(*conv)) {
      task.template_name = "dwconv";
      task.key = conv->key();
      task.flops = conv->conv.flops();
      set_space<DwConvTemplate>(task, *conv);
    } else {
      std::string why;
      auto gt = generic_task_from_group(g, grp, strides_of, &why);
      if (!gt) {
        std::string ops;
        for (const Node* n : cpu::group_io(g, grp).nodes) ops += (ops.empty() ? "" : ", ") + n->op;
        user_error(
            "no OpenCL kernel template takes fused group {} '{}' (ops: {}): {}; the OpenCL "
            "target takes float32 models (compile with --precision fp32), or report the model",
            grp.id, grp.name, ops, why);
      }
      task.template_name = "generic";
      task.key = gt->key();
      task.flops = output_elements(g, grp) * static_cast<double>(gt->nodes.size());
      set_space<GenericTemplate>(task, *gt);
    }
    task.group = grp.id;
    task.group_name = grp.name;
    tasks.push_back(std::move(task));
  }
  return tasks;
}

}  // namespace yoloc::codegen::opencl
