#include "codegen/cpu/tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "codegen/cpu/dwconv_template.h"
#include "codegen/cpu/elementwise_template.h"
#include "codegen/cpu/emit_util.h"
#include "codegen/cpu/pool_template.h"
#include "codegen/cpu/resize_template.h"
#include "codegen/cpu/tail_template.h"
#include "codegen/memory_plan.h"

namespace yoloc::codegen::cpu {
namespace {

KernelArg activation(const Value* v, bool output, int64_t images_of_batch) {
  KernelArg a;
  a.kind = KernelArg::Kind::kActivation;
  a.value = v;
  a.output = output;
  a.bytes = stored_bytes(*v) / static_cast<uint64_t>(images_of_batch);
  return a;
}

KernelArg constant(std::vector<float> data) {
  KernelArg a;
  a.kind = KernelArg::Kind::kConstant;
  a.bytes = data.size() * sizeof(float);
  a.data = std::move(data);
  return a;
}

std::vector<float> float_data(const Value* v) {
  const float* d = v->data.data<float>();
  return std::vector<float>(d, d + v->data.numel());
}

/// The conv and depthwise templates: one image per run, weights packed for the config.
template <class T>
CpuTask conv_like_task(ConvTask t, const ConvOperands& o,
                       const char* name) {
  CpuTask task;
  task.template_name = name;
  task.batch = t.n;
  task.flops = t.flops();
  t.n = 1;
  task.key = t.key();
  set_schedule<T>(task, t);
  task.lower = [t, o, batch = task.batch](const ScheduleConfig& cfg, const std::string& sym) {
    LoweredKernel k;
    k.abi = KernelAbi::kConv;
    k.kernel = T::emit(t, cfg, sym);
    const float* w = o.w->data.template data<float>();
    if constexpr (std::is_same_v<T, ConvTemplate>) {
      k.args.push_back(activation(o.x, false, batch));
      k.args.push_back(constant(T::pack_weights(t, cfg, w)));
    } else {
      k.args.push_back(activation(o.x, false, batch));
      k.args.push_back(constant(T::pack_weights(t, w)));
    }
    // The kernels read bias[k] for every output channel of the (padded) blocks.
    std::vector<float> bias(static_cast<size_t>(ceil_div(t.k, kBlock) * kBlock), 0.f);
    if (o.bias) std::copy_n(o.bias->data.template data<float>(), t.k, bias.begin());
    k.args.push_back(constant(std::move(bias)));
    k.args.push_back(o.res ? activation(o.res, false, batch) : KernelArg{});
    k.args.push_back(activation(o.y, true, batch));
    return k;
  };
  return task;
}

/// The IR-driven templates: activations in, constants plain row-major, outputs.
LoweredKernel arrays_kernel(CpuKernel kernel, const std::vector<const Value*>& ins,
                            const std::vector<const Value*>& outs, int64_t batch) {
  LoweredKernel k;
  k.abi = KernelAbi::kArrays;
  k.kernel = std::move(kernel);
  for (const Value* v : ins)
    k.args.push_back(v->is_constant() ? constant(float_data(v)) : activation(v, false, batch));
  for (const Value* v : outs) k.args.push_back(activation(v, true, batch));
  return k;
}

double output_elements(const GroupIO& io) {
  double n = 0;
  for (const Value* v : io.outputs) n += static_cast<double>(shape_numel(v->type.static_shape()));
  return n;
}

bool is_blocked(const Value* v) {
  return v->layout.layout == Layout::kNCHWc && v->layout.block == kBlock;
}
bool is_plain(const Value* v) { return v->layout.layout == Layout::kNCHW; }

/// Whether the values are stored as the conv kernels read and write them: the dense conv takes
/// NCHW16c (plain NCHW below 16 channels) and makes NCHW16c (plain NCHW below 16 channels); the
/// depthwise conv keeps NCHW16c when the channels are a multiple of 16, else plain NCHW.
bool conv_layouts_fit(const ConvTask& t, const ConvOperands& o, bool depthwise) {
  const bool out_blocked = depthwise ? DwConvTemplate::lanes(t) == kBlock : t.k % kBlock == 0;
  const bool in_blocked = depthwise ? out_blocked : t.c % kBlock == 0;
  const auto fits = [](const Value* v, bool blocked) {
    return !v || (blocked ? is_blocked(v) : is_plain(v));
  };
  return fits(o.x, in_blocked) && fits(o.y, out_blocked) && fits(o.res, out_blocked);
}

std::optional<CpuTask> task_of_group(const Graph& g, const FusedGroup& grp, CpuIsa isa) {
  if (auto t = conv_task_from_group(g, grp)) {
    t->isa = isa;
    const auto o = conv_operands(g, grp);
    if (o && ConvTemplate::matches(*t) && conv_layouts_fit(*t, *o, false))
      return conv_like_task<ConvTemplate>(*t, *o, "conv");
    if (o && DwConvTemplate::matches(*t) && conv_layouts_fit(*t, *o, true))
      return conv_like_task<DwConvTemplate>(*t, *o, "dwconv");
  }
  const GroupIO io = group_io(g, grp);
  if (auto t0 = pool_task_from_group(g, grp)) {
    PoolTask t = *t0;
    CpuTask task;
    task.template_name = "pool";
    task.batch = t.n;
    t.n = 1;
    task.key = t.key();
    double window = 0;
    for (const PoolWindow& w : t.windows) window += static_cast<double>(w.kh * w.kw);
    task.flops = static_cast<double>(task.batch * t.c * t.oh * t.ow) * window;
    set_schedule<PoolTemplate>(task, t);
    task.lower = [t, io, b = task.batch](const ScheduleConfig& cfg, const std::string& sym) {
      return arrays_kernel(PoolTemplate::emit(t, cfg, sym), {io.inputs[0]}, io.outputs, b);
    };
    return task;
  }
  if (auto t0 = resize_task_from_group(g, grp)) {
    ResizeTask t = *t0;
    CpuTask task;
    task.template_name = "resize";
    task.batch = t.n;
    t.n = 1;
    t.out_batch_stride = t.c * t.oh * t.ow;  // one image: the wrapper strides the batch
    task.key = t.key();
    task.flops = static_cast<double>(task.batch * t.c * t.oh * t.ow);
    set_schedule<ResizeTemplate>(task, t);
    task.lower = [t, io, b = task.batch](const ScheduleConfig& cfg, const std::string& sym) {
      return arrays_kernel(ResizeTemplate::emit(t, cfg, sym), {io.inputs[0]}, io.outputs, b);
    };
    return task;
  }
  if (auto t = elementwise_task_from_group(g, grp)) {
    CpuTask task;
    task.template_name = "elementwise";
    task.key = t->key();
    task.flops = output_elements(t->io) * static_cast<double>(t->io.nodes.size());
    set_schedule<ElementwiseTemplate>(task, *t);
    task.lower = [t = *t](const ScheduleConfig& cfg, const std::string& sym) {
      return arrays_kernel(ElementwiseTemplate::emit(t, cfg, sym), t.io.inputs, t.io.outputs, 1);
    };
    return task;
  }
  if (auto t = tail_task_from_group(g, grp)) {
    CpuTask task;
    task.template_name = "tail";
    task.batch = t->images;
    task.key = t->key();
    task.flops = output_elements(t->io) * static_cast<double>(t->io.nodes.size());
    set_schedule<TailTemplate>(task, *t);
    task.lower = [t = *t](const ScheduleConfig& cfg, const std::string& sym) {
      return arrays_kernel(TailTemplate::emit(t, cfg, sym), t.args, t.io.outputs, t.images);
    };
    return task;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ConvOperands> conv_operands(const Graph& g, const FusedGroup& grp) {
  const GroupIO io = group_io(g, grp);
  if (io.outputs.size() != 1) return std::nullopt;
  if (io.nodes.empty() || io.nodes[0]->op != "Conv" || io.nodes[0]->inputs.size() < 2)
    return std::nullopt;
  const Node& conv = *io.nodes[0];
  ConvOperands o;
  o.x = conv.input(0);
  o.w = conv.input(1);
  o.bias = conv.inputs.size() > 2 ? conv.input(2) : nullptr;
  if (!o.w->is_constant() || (o.bias && !o.bias->is_constant())) return std::nullopt;
  const Value* cur = conv.outputs[0];
  for (size_t i = 1; i < io.nodes.size(); ++i) {
    const Node& e = *io.nodes[i];
    if (e.op == "Add") o.res = e.input(0) == cur ? e.input(1) : e.input(0);
    cur = e.outputs[0];
  }
  if (o.res && o.res->is_constant()) return std::nullopt;
  o.y = io.outputs[0];
  if (o.y != cur) return std::nullopt;
  return o;
}

std::vector<CpuTask> extract_cpu_tasks(const Graph& g, CpuIsa isa) {
  std::vector<CpuTask> tasks;
  for (const FusedGroup* group : g.kernel_groups_in_run_order()) {
    const FusedGroup& grp = *group;
    std::optional<CpuTask> t = task_of_group(g, grp, isa);
    if (!t) {
      std::string ops;
      for (const Node* n : group_io(g, grp).nodes) ops += (ops.empty() ? "" : ", ") + n->op;
      user_error(
          "no CPU kernel template takes fused group {} '{}' (ops: {}); the CPU target supports "
          "float32 convolutions, pooling, nearest resize, elementwise chains and the detect "
          "head. Compile with --precision fp32 for quantized models, or report the model",
          grp.id, grp.name, ops);
    }
    t->group = grp.id;
    t->group_name = grp.name;
    tasks.push_back(std::move(*t));
  }
  return tasks;
}

}  // namespace yoloc::codegen::cpu
