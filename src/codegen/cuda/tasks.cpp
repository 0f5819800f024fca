#include "codegen/cuda/tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "codegen/cpu/emit_util.h"
#include "codegen/cpu/tasks.h"
#include "codegen/cuda/conv_upsample.h"
#include "codegen/cuda/detect_tail_template.h"
#include "codegen/cuda/direct_conv_template.h"
#include "codegen/cuda/dw_conv_template.h"
#include "codegen/cuda/simt_conv_template.h"
#include "codegen/cuda/sppf_template.h"
#include "codegen/cuda/stem_pair_template.h"
#include "codegen/cuda/tc_conv_template.h"
#include "codegen/cuda/upsample_template.h"

namespace yoloc::codegen::cuda {
namespace {

CudaArg activation(const Value* v, int64_t element_offset, bool output) {
  CudaArg a;
  a.kind = CudaArg::Kind::kActivation;
  a.value = v;
  a.element_offset = element_offset;
  a.output = output;
  return a;
}

CudaArg constant(const Tensor& t) {
  CudaArg a;
  a.kind = CudaArg::Kind::kConstant;
  a.data.assign(static_cast<const char*>(t.raw()), t.nbytes());
  return a;
}

// A task of one kernel: its source, and the launch (whose own source is then empty).
CudaLowered one_kernel(CudaKernel k) {
  CudaLowered l;
  l.source = std::move(k.source);
  l.launches.push_back(std::move(k));
  return l;
}

bool nhwc(const Value* v) { return !v || v->layout.layout == Layout::kNHWC; }

// A conv's bias as K float32 values: zeros for a conv without one.
Tensor bias_of(const Value* bias, int64_t k) {
  if (bias) return bias->data.cast(DType::kFloat32);
  Tensor zeros(DType::kFloat32, {k});
  std::fill_n(zeros.data<float>(), k, 0.f);
  return zeros;
}

/// How a conv template takes part in the task extraction.
struct ConvRule {
  const char* name;  ///< CudaTask::template_name
  /// Appended to the workload key: records of one template never apply to another's task of the
  /// same conv (the configs of different templates differ, and so do their best ones).
  const char* key_suffix;
  /// Reads any dense NCHW input (e.g. a Cast of an fp16 image), not only the network's.
  bool any_nchw;
  /// Writes NCHW outputs (as layout_selection stores the detect head's last convs).
  bool nchw_out;
};

const ConvRule kDirectRule{"direct_conv", " direct", true, false};
const ConvRule kTensorCoreRule{"tc_conv", "", false, true};
const ConvRule kSimtRule{"simt_conv", "", false, true};
const ConvRule kDwRule{"dw_conv", "", false, true};

/// A conv group on channels-last activations, for one of the conv templates: its workload and
/// operands, nullopt when T does not take it. Its output (and residual) may be NCHW instead where
/// the template writes NCHW.
template <class T>
std::optional<std::pair<CudaConvTask, cpu::ConvOperands>> conv_workload(const Graph& g,
                                                                       const FusedGroup& grp,
                                                                       const ConvRule& rule,
                                                                       int sm) {
  const auto o = cpu::conv_operands(g, grp);
  if (!o) return std::nullopt;
  const bool out_nchw = o->y->layout.layout == Layout::kNCHW;
  if (out_nchw ? !rule.nchw_out : !nhwc(o->y)) return std::nullopt;
  if (o->res && (o->res->layout != o->y->layout || o->res->type.dtype != o->y->type.dtype))
    return std::nullopt;
  // The image input (dense NCHW float32, or float16 / bfloat16 with narrow I/O) is converted by
  // the conv's own loads.
  const DType xd = o->x->type.dtype;
  const bool image_in =
      !nhwc(o->x) && is_storage_dtype(xd) &&
      (rule.any_nchw || std::find(g.inputs.begin(), g.inputs.end(), o->x) != g.inputs.end());
  if (!nhwc(o->x) && !image_in) return std::nullopt;
  auto t = cuda_conv_task_from_group(g, grp, image_in ? o->y->type.dtype : o->x->type.dtype,
                                     o->y->type.dtype);
  if (!t) return std::nullopt;
  t->in_nchw = image_in;
  if (image_in) t->image_dtype = xd;
  t->out_nchw = out_nchw;
  t->sm = sm;
  // The kernels address an NCHW input as a dense tensor.
  if (image_in && !(t->in == ChannelSlice{t->conv.c, 0})) return std::nullopt;
  if (!T::matches(*t)) return std::nullopt;
  return std::pair(*t, *o);
}

/// The per-anchor constants of a detect tail (rows of A floats; one zero when it has none).
Tensor tail_table(const DetectTailTask& t) {
  Tensor table(DType::kFloat32, {static_cast<int64_t>(std::max<size_t>(t.table.size(), 1))});
  std::fill_n(table.data<float>(), table.numel(), 0.f);
  std::copy(t.table.begin(), t.table.end(), table.data<float>());
  return table;
}

/// The task of conv workload t with operands o (for a b2b pair: the first's x, w and bias, the
/// second's output as y); `resize`: the Resize whose output t's upsampled copy (t.up) is;
/// `upsampled`: the Resize whose source t reads as its upsampled input (t.up_in).
template <class T>
CudaTask conv_task(const CudaConvTask& t, const cpu::ConvOperands& o, const ConvRule& rule,
                   const Node* resize = nullptr, const UpsampledInput* upsampled = nullptr) {
  CudaTask task;
  if (resize) task.absorbed.push_back(resize->group);
  if (upsampled) task.absorbed.push_back(upsampled->resize->group);
  const Value* up_in_value = upsampled ? upsampled->source : nullptr;
  task.template_name = rule.name;
  task.key = t.key() + rule.key_suffix;
  task.flops = t.conv.flops() + (t.b2b ? t.second_stage().conv.flops() : 0.0);
  set_schedule<T>(task, t);
  const Value* up_value = resize ? resize->outputs[0] : nullptr;
  task.lower = [t, o, up_value, up_in_value](const ScheduleConfig& cfg, const std::string& prefix) {
    CudaLowered l = one_kernel(T::emit(t, cfg, prefix));
    l.args.push_back(activation(o.x, t.in.offset, false));
    const Tensor w = o.w->data.cast(DType::kFloat32);
    l.args.push_back(constant(T::pack_weights(t, w.data<float>())));
    l.args.push_back(constant(bias_of(o.bias, t.conv.k)));
    // A kernel addresses the buffer a slice lies in; the slice begins `offset` channels in: that
    // many elements in NHWC, channel planes in NCHW. A b2b pair writes its second stage's output.
    // Class scores and boxes are addressed from the start of the detector's output, which y
    // then is.
    const CudaConvTask last = t.b2b ? t.second_stage() : t;
    const int64_t plane = last.out_nchw ? t.conv.oh * t.conv.ow : 1;
    l.args.push_back(o.res ? activation(o.res, t.res.offset * plane, false) : CudaArg{});
    l.args.push_back(activation(o.y, t.scores || t.boxes ? 0 : last.out.offset * plane, true));
    l.args.push_back(up_value ? activation(up_value, t.up->out.offset, true) : CudaArg{});
    // ---- Parameters of fused forms after the common six, in the kernel's order
    // (tc_conv_template.h): an upsampled input's source, a b2b pair's second weights and bias,
    // the box decode's table.
    if (t.up_in) l.args.push_back(activation(up_in_value, t.up_in->from.offset, false));
    if (t.b2b) {
      l.args.push_back(constant(TensorCoreConvTemplate::pack_b2b_weights(t)));
      l.args.push_back(constant(t.b2b->bias));
    }
    if (t.boxes) l.args.push_back(constant(tail_table(*t.boxes->tail)));
    return l;
  };
  return task;
}

template <class T>
std::optional<CudaTask> conv_task(const Graph& g, const FusedGroup& grp, const ConvRule& rule,
                                  int sm) {
  auto w = conv_workload<T>(g, grp, rule, sm);
  if (!w) return std::nullopt;
  CudaConvTask& t = w->first;
  // A nearest Resize of the output is written by the conv as its upsampled copy.
  const Node* resize = nullptr;
  if (const auto up = t.out_nchw ? std::nullopt : upsample_consumer(g, w->second.y)) {
    t.up = up->up;
    resize = up->resize;
    if (!T::matches(t)) {
      t.up.reset();
      resize = nullptr;
    }
  }
  return conv_task<T>(t, w->second, rule, resize);
}

/// The task of a tensor-core conv group reading part of its input from the source of the Resize
/// that writes it (upsampled_input): without records of its own it takes the config of the same
/// conv reading its whole input (twin_config).
CudaTask up_in_task(const std::pair<CudaConvTask, cpu::ConvOperands>& w, const UpsampledInput& u) {
  CudaConvTask t = w.first;
  t.up_in = u.up_in;
  CudaTask task = conv_task<TensorCoreConvTemplate>(t, w.second, kTensorCoreRule, nullptr, &u);
  task.twin_key = w.first.key() + kTensorCoreRule.key_suffix;
  return task;
}

/// A back-to-back pair: `first`'s conv, then `second`'s 1x1 conv of its output, as one task.
struct B2bPair {
  const FusedGroup* first = nullptr;
  const FusedGroup* second = nullptr;
  CudaConvTask task;
  cpu::ConvOperands operands;
  std::string first_key, second_key;  ///< the two convs' workload keys, unfused
};

/// The workload of a group the tensor-core template takes (not the direct one, which takes the
/// shallow first convs before it).
std::optional<std::pair<CudaConvTask, cpu::ConvOperands>> tensor_core_workload(
    const Graph& g, const FusedGroup& grp, int sm) {
  if (conv_workload<DirectConvTemplate>(g, grp, kDirectRule, sm)) return std::nullopt;
  return conv_workload<TensorCoreConvTemplate>(g, grp, kTensorCoreRule, sm);
}

/// The kernel group of the one node reading value v of group `first`, if v has one reader, in
/// another group; else nullptr.
const FusedGroup* sole_consumer(const Graph& g, const FusedGroup& first, const Value* v) {
  const std::vector<Node*> users = g.users(v);
  if (users.size() != 1 || users[0]->group < 0 || users[0]->group == first.id) return nullptr;
  for (const FusedGroup& grp : g.groups)
    if (grp.id == users[0]->group && grp.is_kernel()) return &grp;
  return nullptr;
}

/// The pair `first` begins (B2bPolicy says which pairs there are), or nullopt.
std::optional<B2bPair> b2b_pair(const Graph& g, const FusedGroup& first, int sm) {
  const auto a = tensor_core_workload(g, first, sm);
  if (!a) return std::nullopt;
  CudaConvTask t = a->first;
  const cpu::ConvOperands& o1 = a->second;
  const ConvTask& c1 = t.conv;
  if (t.out_nchw || !(t.out == ChannelSlice{c1.k, 0}) || c1.residual || g.is_output(o1.y))
    return std::nullopt;
  const FusedGroup* second = sole_consumer(g, first, o1.y);
  if (!second) return std::nullopt;
  const auto b = tensor_core_workload(g, *second, sm);
  if (!b) return std::nullopt;
  const CudaConvTask& t2 = b->first;
  const cpu::ConvOperands& o2 = b->second;
  const ConvTask& c2 = t2.conv;
  if (o2.x != o1.y || c2.kh != 1 || c2.kw != 1 || c2.sh != 1 || c2.sw != 1 || c2.ph != 0 ||
      c2.pw != 0 || c2.residual || c2.groups != 1 || t2.in_nchw || t2.dtype != t.out_dtype ||
      !(t2.in == ChannelSlice{c2.c, 0}))
    return std::nullopt;
  const std::string first_key = t.key();
  B2bStage s;
  s.k = c2.k;
  s.act = c2.act;
  s.out_dtype = t2.out_dtype;
  s.out = t2.out;
  s.out_nchw = t2.out_nchw;
  s.w = o2.w->data.cast(DType::kFloat32);
  s.bias = bias_of(o2.bias, c2.k);
  t.b2b = std::move(s);
  if (!TensorCoreConvTemplate::matches(t)) return std::nullopt;
  return B2bPair{&first,    second,  std::move(t), {o1.x, o1.w, o1.bias, nullptr, o2.y},
                 first_key, t2.key()};
}

/// Whether `policy` fuses pair p.
bool chosen(const B2bPolicy& policy, const B2bPair& p) {
  switch (policy.mode) {
    case B2bPolicy::Mode::kOff: return false;
    case B2bPolicy::Mode::kAll: return true;
    case B2bPolicy::Mode::kMeasured: {
      const auto time = [&](const std::string& key) {
        const auto it = policy.seconds.find(key);
        return it == policy.seconds.end() ? 0.0 : it->second;
      };
      const double pair = time(p.task.key()), first = time(p.first_key),
                   second = time(p.second_key);
      return pair > 0 && first > 0 && second > 0 && pair + policy.margin_s < first + second;
    }
  }
  return false;
}

/// The head convs that store the class scores (CudaConvTask::scores), and perhaps the boxes
/// (CudaConvTask::boxes), of the DFL detect tail `tail` straight into its output, by the group
/// whose output they replace (a pair's second group): their workloads and operands as redirected
/// (y the detector's output), and the values they no longer store.
struct HeadPlan {
  struct Conv {
    CudaConvTask task;
    cpu::ConvOperands operands;
    std::string twin_key;        ///< the key of the same conv storing its own output
    const Value* own = nullptr;  ///< its own output, which only the tail read
  };
  const FusedGroup* tail = nullptr;
  std::shared_ptr<const DetectTailTask>
      matched;                ///< the tail as detect_tail_task_from_group made it
  std::map<int, Conv> convs;  ///< by group
  bool boxes = false;         ///< the boxes too: the tail has nothing left to do and is not run
};

/// Adds to `plan` (the class scores' convs of the tail t) the b2b pairs decoding the boxes of
/// every level (CudaConvTask::boxes): when each level's S x R box logits are the whole output of
/// a chosen pair that only the tail reads, which TensorCoreConvTemplate takes as such (no
/// activation, 16-bit logits, a staged epilogue that fits). Else leaves the plan as it is: the
/// tail keeps its box units. The box maps are then never stored, and the tail not run: on an H200
/// at batch 128 it read every logit once more (59 us of yolov8n's 5.1 ms).
void add_boxes(const Graph& g, const std::map<int, B2bPair>& pair_of_second, HeadPlan& plan) {
  const DetectTailTask& t = *plan.matched;
  std::map<int, HeadPlan::Conv> convs;
  for (const DetectTailLevel& l : t.levels) {
    const Value* v = t.inputs[static_cast<size_t>(l.box_input)].value;
    int reads = 0;  // of this input by the levels
    for (const DetectTailLevel& o : t.levels)
      reads += (o.box_input == l.box_input) + (o.cls_input == l.box_input);
    const Node* p = v->producer;
    if (reads != 1 || l.box_channel != 0 || !p || g.is_output(v) ||
        !(v->type.static_shape() == Shape{t.n, t.sides * t.bins, l.h, l.w}))
      return;
    for (const Node* u : g.users(v))
      if (u->group != plan.tail->id) return;
    const auto pair = pair_of_second.find(p->group);
    if (pair == pair_of_second.end() || pair->second.operands.y != v) return;
    HeadPlan::Conv c{pair->second.task, pair->second.operands, pair->second.task.key(), v};
    c.task.boxes = CudaBoxesOut{plan.matched, l.first};
    c.operands.y = t.output.value;
    if (!TensorCoreConvTemplate::matches(c.task)) return;
    convs.emplace(p->group, std::move(c));
  }
  plan.convs.merge(convs);
  plan.boxes = true;
}

/// Where the class scores go instead of a head output of their own: into the detector's output,
/// when at every level of the DFL tail they are all the channels of a dense NCHW output of a
/// tensor-core conv (or b2b pair) without activation that only the tail reads. The tail's class
/// units (a read and a write of every score) then go; the convs compute the sigmoid. nullopt
/// when some level's scores come otherwise (float32 networks, whose heads the SIMT template
/// computes, keep the tail's class units).
std::optional<HeadPlan> head_plan(const Graph& g, const std::vector<const FusedGroup*>& groups,
                                  const std::map<int, B2bPair>& pair_of_second, int sm) {
  HeadPlan plan;
  for (const FusedGroup* grp : groups)
    if (grp->kind == GroupKind::kDetectTail) plan.tail = grp;
  if (!plan.tail) return std::nullopt;
  const auto matched = detect_tail_task_from_group(
      g, *plan.tail, [&g](const Value* v) { return cuda_operand_of(g, v); });
  if (!matched) return std::nullopt;
  plan.matched = std::make_shared<const DetectTailTask>(*matched);
  const DetectTailTask* t = plan.matched.get();
  const std::vector<int64_t>& os = t->output.strides;
  if (os[2] != 1 || os[1] <= 0 || os[0] % os[1] != 0) return std::nullopt;
  const ChannelSlice rows{os[0] / os[1], t->class_offset};
  for (const DetectTailLevel& l : t->levels) {
    const Value* v = t->inputs[static_cast<size_t>(l.cls_input)].value;
    bool shared = false;
    for (const DetectTailLevel& o : t->levels) shared = shared || o.box_input == l.cls_input;
    const Node* p = v->producer;
    if (shared || l.cls_channel != 0 || !p || g.is_output(v) || v->layout.layout != Layout::kNCHW ||
        !(v->type.static_shape() == Shape{t->n, t->classes, l.h, l.w}))
      return std::nullopt;
    for (const Node* u : g.users(v))
      if (u->group != plan.tail->id) return std::nullopt;
    std::optional<std::pair<CudaConvTask, cpu::ConvOperands>> w;
    const auto pair = pair_of_second.find(p->group);
    if (pair != pair_of_second.end()) {
      w.emplace(pair->second.task, pair->second.operands);
    } else {
      for (const FusedGroup* q : groups)
        if (q->id == p->group) w = tensor_core_workload(g, *q, sm);
    }
    if (!w || w->second.y != v) return std::nullopt;
    CudaConvTask& c = w->first;
    const std::string twin_key = c.key();
    // The last conv's output: a pair's second stage, or the conv's own.
    const bool nchw = c.b2b ? c.b2b->out_nchw : c.out_nchw;
    ChannelSlice& out = c.b2b ? c.b2b->out : c.out;
    DType& out_dtype = c.b2b ? c.b2b->out_dtype : c.out_dtype;
    if (!nchw || !(out == ChannelSlice{t->classes, 0})) return std::nullopt;
    out = rows;
    out_dtype = t->output.dtype;
    c.scores = CudaScoresOut{os[1], l.first};
    w->second.y = t->output.value;
    if (!TensorCoreConvTemplate::matches(w->first)) return std::nullopt;
    plan.convs.emplace(p->group, HeadPlan::Conv{std::move(w->first), w->second, twin_key, v});
  }
  add_boxes(g, pair_of_second, plan);
  return plan;
}

/// A stem pair: `first`'s conv of the image, then `second`'s conv of its output, as one task.
struct StemPair {
  const FusedGroup* first = nullptr;
  const FusedGroup* second = nullptr;
  StemPairTask task;
  cpu::ConvOperands o1, o2;
};

/// The stem pair `first` begins (StemPairTemplate::matches), or nullopt.
std::optional<StemPair> stem_pair(const Graph& g, const FusedGroup& first, int sm) {
  const auto a = conv_workload<DirectConvTemplate>(g, first, kDirectRule, sm);
  if (!a || !a->first.in_nchw || g.is_output(a->second.y)) return std::nullopt;
  const FusedGroup* second = sole_consumer(g, first, a->second.y);
  if (!second) return std::nullopt;
  const auto b = tensor_core_workload(g, *second, sm);
  if (!b || b->second.x != a->second.y) return std::nullopt;
  StemPair p{&first, second, {a->first, b->first}, a->second, b->second};
  if (!StemPairTemplate::matches(p.task)) return std::nullopt;
  return p;
}

CudaTask stem_pair_task(const StemPair& p) {
  CudaTask task;
  task.template_name = "stem_pair";
  task.key = p.task.key();
  task.flops = p.task.first.conv.flops() + p.task.second.conv.flops();
  set_schedule<StemPairTemplate>(task, p.task);
  task.lower = [t = p.task, o1 = p.o1, o2 = p.o2](const ScheduleConfig& cfg,
                                                  const std::string& prefix) {
    CudaLowered l = one_kernel(StemPairTemplate::emit(t, cfg, prefix));
    l.args.push_back(activation(o1.x, 0, false));
    const Tensor w0 = o1.w->data.cast(DType::kFloat32);
    l.args.push_back(constant(StemPairTemplate::pack_first_weights(t, w0.data<float>())));
    l.args.push_back(constant(bias_of(o1.bias, t.first.conv.k)));
    const Tensor w1 = o2.w->data.cast(DType::kFloat32);
    l.args.push_back(constant(StemPairTemplate::pack_second_weights(t, w1.data<float>())));
    l.args.push_back(constant(bias_of(o2.bias, t.second.conv.k)));
    l.args.push_back(activation(o2.y, t.second.out.offset, true));
    return l;
  };
  return task;
}

std::optional<CudaTask> generic_task(const Graph& g, const FusedGroup& grp) {
  const auto t = generic_task_from_group(
      g, grp, [&g](const Value* v) { return cuda_operand_of(g, v); });
  if (!t || !GenericTemplate::matches(*t)) return std::nullopt;
  CudaTask task;
  task.template_name = "generic";
  task.key = t->key();
  double elements = 0;
  for (const CudaOperand& o : t->outputs)
    elements += static_cast<double>(shape_numel(o.value->type.static_shape()));
  task.flops = elements * static_cast<double>(t->nodes.size());
  set_schedule<GenericTemplate>(task, *t);
  task.lower = [t = *t](const ScheduleConfig& cfg, const std::string& prefix) {
    GenericKernels k = GenericTemplate::emit(t, cfg, prefix);
    CudaLowered l;
    l.source = std::move(k.source);
    l.launches = std::move(k.launches);
    l.scratch_bytes = k.scratch_bytes;
    for (const CudaOperand& o : t.inputs) l.args.push_back(activation(o.value, 0, false));
    for (const Value* c : t.constants) l.args.push_back(constant(c->data.cast(DType::kFloat32)));
    for (const CudaOperand& o : t.outputs) l.args.push_back(activation(o.value, 0, true));
    CudaArg scratch;
    scratch.kind = CudaArg::Kind::kScratch;
    l.args.push_back(scratch);
    return l;
  };
  return task;
}

std::optional<CudaTask> sppf_task(const Graph& g, const FusedGroup& grp) {
  const auto t = sppf_task_from_group(g, grp);
  if (!t) return std::nullopt;
  CudaTask task;
  task.template_name = "sppf";
  task.key = t->key();
  // The comparisons of the separable window maxes.
  for (const SppfStage& s : t->stages) {
    task.flops +=
        static_cast<double>(t->n * t->c * t->h * t->w) * static_cast<double>(s.kh + s.kw - 2);
  }
  set_schedule<SppfTemplate>(task, *t);
  task.lower = [t = *t](const ScheduleConfig& cfg, const std::string& prefix) {
    CudaLowered l = one_kernel(SppfTemplate::emit(t, cfg, prefix));
    l.args.push_back(activation(t.x, t.in.offset, false));
    for (size_t i = 0; i < t.outputs.size(); ++i) {
      l.args.push_back(activation(t.outputs[i], t.out_slices[i].offset, true));
    }
    return l;
  };
  return task;
}

std::optional<CudaTask> upsample_task(const Graph& g, const FusedGroup& grp) {
  const auto t = upsample_task_from_group(g, grp);
  if (!t) return std::nullopt;
  CudaTask task;
  task.template_name = "upsample";
  task.key = t->key();
  task.flops = static_cast<double>(t->n * t->c * t->h * t->w * t->sh * t->sw);  // elements stored
  set_schedule<UpsampleTemplate>(task, *t);
  task.lower = [t = *t](const ScheduleConfig& cfg, const std::string& prefix) {
    CudaLowered l = one_kernel(UpsampleTemplate::emit(t, cfg, prefix));
    l.args.push_back(activation(t.x, t.in.offset, false));
    l.args.push_back(activation(t.y, t.out.offset, true));
    return l;
  };
  return task;
}

/// The task of a matched detect tail t; with t.classes_stored, of box units only (the head convs
/// store the class scores, head_plan), its class inputs passed as null.
CudaTask detect_tail_task(const DetectTailTask& t) {
  const bool classes_stored = t.classes_stored;
  CudaTask task;
  task.template_name = "detect_tail";
  task.key = t.key();
  // The box unit's softmax and expectation (about 4 operations a logit), a sigmoid a class.
  task.flops = static_cast<double>(t.n * t.anchors) *
               static_cast<double>(4 * t.sides * t.bins + (classes_stored ? 0 : 4 * t.classes));
  set_schedule<DetectTailTemplate>(task, t);
  task.lower = [t](const ScheduleConfig& cfg, const std::string& prefix) {
    CudaLowered l = one_kernel(DetectTailTemplate::emit(t, cfg, prefix));
    std::set<int> read;
    for (const DetectTailLevel& lv : t.levels) {
      read.insert(lv.box_input);
      if (!t.classes_stored) read.insert(lv.cls_input);
    }
    for (size_t i = 0; i < t.inputs.size(); ++i)
      l.args.push_back(read.count(static_cast<int>(i)) ? activation(t.inputs[i].value, 0, false)
                                                       : CudaArg{});
    const Tensor table = tail_table(t);
    l.args.push_back(constant(table));
    l.args.push_back(activation(t.output.value, 0, true));
    return l;
  };
  return task;
}

/// The detect tail of `grp`, if it is one the detect-tail template takes.
std::optional<CudaTask> detect_tail_task(const Graph& g, const FusedGroup& grp) {
  if (grp.kind != GroupKind::kDetectTail) return std::nullopt;
  auto t =
      detect_tail_task_from_group(g, grp, [&g](const Value* v) { return cuda_operand_of(g, v); });
  if (!t) return std::nullopt;
  return detect_tail_task(*t);
}

std::optional<CudaTask> task_of_group(const Graph& g, const FusedGroup& grp, int sm) {
  // Convs of at most 4 input channels (the first conv) are direct convolutions; an implicit
  // GEMM of so shallow a depth spends its time gathering.
  if (auto t = conv_task<DirectConvTemplate>(g, grp, kDirectRule, sm)) return t;
  if (auto t = conv_task<TensorCoreConvTemplate>(g, grp, kTensorCoreRule, sm)) return t;
  if (auto t = conv_task<SimtConvTemplate>(g, grp, kSimtRule, sm)) return t;
  if (auto t = conv_task<DwConvTemplate>(g, grp, kDwRule, sm)) return t;
  if (auto t = sppf_task(g, grp)) return t;
  if (auto t = detect_tail_task(g, grp)) return t;
  if (auto t = upsample_task(g, grp)) return t;
  return generic_task(g, grp);
}

}  // namespace

CudaOperand cuda_operand_of(const Graph& g, const Value* v) {
  CudaOperand op;
  op.value = v;
  op.dtype = v->type.dtype;
  const Shape s = v->type.static_shape();
  op.strides = cpu::dense_strides(s);
  if (s.size() != 4) return op;
  const auto slice = channel_slice_of(g, v);
  const Node* p = v->producer;
  if (!slice && p && p->is_view() && p->op != "Concat" && p->op != "Split" && p->op != "Slice") {
    // A reshape-like view re-addresses a dense buffer: dense in its own layout.
    op.strides = dense_operand_strides(v);
    return op;
  }
  if (!slice)
    user_error("value '{}' is a view the CUDA target cannot address (a slice of other than the "
               "channel axis); report the model",
               v->name);
  const int64_t hw = s[2] * s[3];
  if (v->layout.layout == Layout::kNHWC) {
    op.strides = {hw * slice->stride, 1, s[3] * slice->stride, slice->stride};
  } else {
    op.strides = {hw * slice->stride, hw, s[3], 1};
  }
  return op;
}

std::vector<CudaTask> extract_cuda_tasks(const Graph& g, int sm, const B2bPolicy& b2b,
                                         bool stem_pairs) {
  const std::vector<const FusedGroup*> groups = g.kernel_groups_in_run_order();
  // The pairs, in run order, each group in one at most; a pair runs in its second's place.
  std::map<int, StemPair> stem_of_second;
  std::map<int, B2bPair> pair_of_second;
  std::set<int> paired;
  const auto pair_up = [&paired](const FusedGroup* first, const FusedGroup* second) {
    if (paired.count(first->id) || paired.count(second->id)) return false;
    paired.insert(first->id);
    paired.insert(second->id);
    return true;
  };
  for (const FusedGroup* grp : groups) {
    if (!stem_pairs) break;
    std::optional<StemPair> p = stem_pair(g, *grp, sm);
    if (p && pair_up(grp, p->second)) stem_of_second.emplace(p->second->id, std::move(*p));
  }
  for (const FusedGroup* grp : groups) {
    if (b2b.mode == B2bPolicy::Mode::kOff || paired.count(grp->id)) continue;
    std::optional<B2bPair> p = b2b_pair(g, *grp, sm);
    if (p && chosen(b2b, *p) && pair_up(grp, p->second))
      pair_of_second.emplace(p->second->id, std::move(*p));
  }
  const std::optional<HeadPlan> head = head_plan(g, groups, pair_of_second, sm);
  // A conv of the plan: its task, storing the class scores or the boxes.
  const auto head_task = [&head](int group) -> std::optional<CudaTask> {
    if (!head || !head->convs.count(group)) return std::nullopt;
    const HeadPlan::Conv& c = head->convs.at(group);
    CudaTask task = conv_task<TensorCoreConvTemplate>(c.task, c.operands, kTensorCoreRule);
    task.twin_key = c.twin_key;
    task.redirected_from = c.own;
    task.redirected_into = c.operands.y;
    return task;
  };
  std::vector<CudaTask> tasks;
  std::set<int> absorbed;  // groups another task computes
  // Above kUpsampleMaxBatch, a Resize written into a concat that a 1x1 conv alone reads: the conv
  // reads the Resize's source instead (it runs later, so the Resize is marked absorbed now).
  std::map<int, std::pair<std::pair<CudaConvTask, cpu::ConvOperands>, UpsampledInput>> up_in_of;
  for (const FusedGroup* grp : groups) {
    if (paired.count(grp->id) || (head && head->convs.count(grp->id))) continue;
    // The pattern first (cheap), the workload only for the convs that read one.
    const auto o = cpu::conv_operands(g, *grp);
    const auto in = o ? channel_slice_of(g, o->x) : std::nullopt;
    const auto u = in ? upsampled_input(g, o->x, *in) : std::nullopt;
    if (!u || absorbed.count(u->resize->group)) continue;
    auto w = tensor_core_workload(g, *grp, sm);
    if (!w) continue;
    CudaConvTask t = w->first;
    t.up_in = u->up_in;
    if (!TensorCoreConvTemplate::matches(t)) continue;
    absorbed.insert(u->resize->group);
    up_in_of.emplace(grp->id, std::pair(std::move(*w), *u));
  }
  const auto add_pair = [&tasks](CudaTask t, const FusedGroup& first, const FusedGroup& second) {
    t.group = first.id;
    t.second_group = second.id;
    t.group_name = first.name + "+" + second.name;
    tasks.push_back(std::move(t));
  };
  for (const FusedGroup* grp : groups) {
    if (absorbed.count(grp->id)) continue;
    if (auto it = stem_of_second.find(grp->id); it != stem_of_second.end()) {
      add_pair(stem_pair_task(it->second), *it->second.first, *grp);
      continue;
    }
    if (auto it = pair_of_second.find(grp->id); it != pair_of_second.end()) {
      const B2bPair& p = it->second;
      std::optional<CudaTask> t = head_task(grp->id);
      add_pair(t ? std::move(*t)
                 : conv_task<TensorCoreConvTemplate>(p.task, p.operands, kTensorCoreRule),
               *p.first, *grp);
      continue;
    }
    if (paired.count(grp->id)) continue;  // the first of a pair
    if (head && head->boxes && grp == head->tail) continue;  // done by the head convs
    std::optional<CudaTask> t = head_task(grp->id);
    if (!t && head && grp == head->tail) {
      DetectTailTask box_units = *head->matched;
      box_units.classes_stored = true;
      t = detect_tail_task(box_units);
    }
    if (auto it = up_in_of.find(grp->id); !t && it != up_in_of.end())
      t = up_in_task(it->second.first, it->second.second);
    if (!t) t = task_of_group(g, *grp, sm);
    if (!t) {
      std::string ops;
      for (const Node* n : cpu::group_io(g, *grp).nodes) ops += (ops.empty() ? "" : ", ") + n->op;
      user_error("no CUDA kernel template takes fused group {} '{}' (ops: {}); report the model",
                 grp->id, grp->name, ops);
    }
    t->group = grp->id;
    absorbed.insert(t->absorbed.begin(), t->absorbed.end());
    t->group_name = grp->name;
    tasks.push_back(std::move(*t));
  }
  return tasks;
}

std::vector<Redirect> redirects(const std::vector<CudaTask>& tasks) {
  std::vector<Redirect> out;
  for (const CudaTask& t : tasks) {
    if (t.redirected_from) {
      out.push_back(
          {t.redirected_from, t.redirected_into, t.second_group >= 0 ? t.second_group : t.group});
    }
  }
  return out;
}

std::vector<MergedGroups> merged_groups(const std::vector<CudaTask>& tasks) {
  std::vector<MergedGroups> out;
  for (const CudaTask& t : tasks) {
    if (t.second_group >= 0) out.push_back({{t.group, t.second_group}, true});
    if (!t.absorbed.empty()) {
      MergedGroups m{{t.group}, false};
      m.groups.insert(m.groups.end(), t.absorbed.begin(), t.absorbed.end());
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace yoloc::codegen::cuda
