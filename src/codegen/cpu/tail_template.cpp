#include "codegen/cpu/tail_template.h"

#include <fmt/format.h>

#include "codegen/cpu/tail_emitter.h"

namespace yoloc::codegen::cpu {

std::string TailTask::key() const {
  std::string s = "detect_tail_f32";
  for (const Node* n : io.nodes) {
    s += " " + n->op;
    if (n->op == "Cast") s += ">" + std::string(dtype_name(n->outputs[0]->type.dtype));
    s += "[";
    for (const Value* o : n->outputs) {
      for (const Dim& d : o->type.dims) s += std::to_string(d.value) + ",";
    }
    s += "]";
  }
  return images > 1 ? s + " per-image" : s;
}

namespace {

/// Whether every node of the task keeps images apart along dim 0 (batch n): all activations
/// have n as their first dim, and no node works along axis 0.
bool images_independent(const TailTask& t, int64_t n) {
  const auto batch_first = [n](const Value* v) {
    return !v || v->is_constant() ||
           (!v->type.dims.empty() && v->type.dims[0].known() && v->type.dims[0].value == n);
  };
  for (const Node* node : t.io.nodes) {
    for (const Value* v : node->inputs)
      if (!batch_first(v)) return false;
    for (const Value* v : node->outputs)
      if (!batch_first(v)) return false;
    const size_t rank = node->outputs[0]->type.dims.size();
    const auto axis0 = [&](const char* attr, int64_t dflt) {
      return tail::norm_axis(node->attrs.get_int(attr, dflt), rank) == 0;
    };
    if ((node->op == "Concat" || node->op == "Split") && axis0("axis", 0)) return false;
    if (node->op == "Softmax" && axis0("axis", -1)) return false;
    if (node->op == "Transpose") {
      const auto perm = node->attrs.get_ints("perm", {});
      if (perm.empty() || perm[0] != 0) return false;
    }
    if (node->op == "MatMul" && rank < 3) return false;
    // Ops along an axis of their data input (whose rank the output's may not be). Gather's
    // indices, read whole by every image, must be shared by all of them.
    const size_t in_rank = node->input(0) ? node->input(0)->type.dims.size() : 0;
    const auto data_axis0 = [&](int64_t dflt) {
      return tail::norm_axis(node->attrs.get_int("axis", dflt), in_rank) == 0;
    };
    if ((node->op == "TopK" && data_axis0(-1)) ||
        ((node->op == "ArgMax" || node->op == "ArgMin" || node->op == "GatherElements") &&
         data_axis0(0)) ||
        (node->op == "Gather" && (data_axis0(0) || !node->input(1)->is_constant()))) {
      return false;
    }
    if (node->op == "ReduceMax" || node->op == "ReduceMin" || node->op == "Tile") {
      const auto ints = tail::known_ints(node->inputs.size() > 1 ? node->input(1) : nullptr);
      if (!ints || ints->empty()) return false;
      if (node->op == "Tile" && (*ints)[0] != 1) return false;
      for (int64_t a : *ints)
        if (node->op != "Tile" && tail::norm_axis(a, in_rank) == 0) return false;
    }
    if (node->op == "Slice") {
      const Value* axes = node->inputs.size() > 3 ? node->input(3) : nullptr;
      if (!axes || !axes->known()) return false;
      for (double a : axes->known()->to_doubles())
        if (tail::norm_axis(static_cast<int64_t>(a), rank) == 0) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<TailTask> tail_task_from_group(const Graph& g, const FusedGroup& group) {
  TailTask t;
  t.io = group_io(g, group);
  if (t.io.nodes.empty() || t.io.outputs.empty()) return std::nullopt;
  for (const Value* in : t.io.inputs) {
    if (!in->is_constant()) {
      if (!tail::static_tail_shape(in)) return std::nullopt;
      t.args.push_back(in);
    } else if (in->type.dtype == DType::kFloat32) {
      t.args.push_back(in);
    }
  }
  const Value* first = nullptr;
  for (const Value* in : t.args)
    if (!in->is_constant() && !first) first = in;
  const int64_t n = first && !first->type.dims.empty() ? first->type.dims[0].value : 1;
  if (n > 1 && images_independent(t, n)) t.images = n;
  for (const Value* o : t.io.outputs) {
    if (t.images == 1 && !dense_output(g, o)) return std::nullopt;
    if (o->layout.layout == Layout::kNCHW) continue;
    // NCHWc outputs (a value a convolution reads) are re-laid from a plain buffer at the end.
    const auto s = static_f32_shape(o);  // float32 only: the re-layout copies floats
    if (o->layout.layout != Layout::kNCHWc || !s || s->size() != 4 || o->layout.block <= 0 ||
        (*s)[1] % o->layout.block != 0) {
      return std::nullopt;
    }
  }
  if (!tail_kernel_body(t, 1)) return std::nullopt;
  return t;
}

bool TailTemplate::matches(const TailTask& t) {
  return !t.io.nodes.empty() && !t.io.outputs.empty() && tail_kernel_body(t, 1).has_value();
}

ScheduleSpace TailTemplate::space(const TailTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"unroll", "unroll of every innermost loop", {1, 4, 8}});
  return s;
}

bool TailTemplate::valid(const TailTask& t, const ScheduleConfig& cfg) {
  return cfg.in_space(space(t)) && matches(t);
}

ScheduleConfig TailTemplate::default_config(const TailTask& t) {
  YOLOC_CHECK(matches(t), "tail template does not match {}", t.key());
  return ScheduleConfig({{"unroll", 4}});
}

CpuKernel TailTemplate::emit(const TailTask& t, const ScheduleConfig& cfg,
                             const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "tail config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  CpuKernel k;
  k.symbol = symbol;
  k.work_items = 1;
  k.source = fmt::format(
      "{}// detect_tail_f32 ({} nodes) | {}\nextern \"C\" void {}(const float* const* in, "
      "float* const* out, int64_t begin, int64_t end) {{\n  if (begin > 0 || end < 1) return;\n"
      "{}}}\n",
      kScalarPrelude, t.io.nodes.size(), cfg.str(), symbol, *tail_kernel_body(t, cfg.get("unroll")));
  return k;
}

}  // namespace yoloc::codegen::cpu
