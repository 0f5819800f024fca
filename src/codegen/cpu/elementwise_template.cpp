#include "codegen/cpu/elementwise_template.h"

#include <fmt/format.h>

#include <map>

#include "ir/op_registry.h"

namespace yoloc::codegen::cpu {
namespace {

// The physical loop dims of the output: NCHW16c splits C into blocks and lanes.
Shape physical(const ElementwiseTask& t) {
  if (!t.blocked) return t.shape;
  return {t.shape[0], t.shape[1] / kBlock, t.shape[2], t.shape[3], kBlock};
}

// Strides of an operand over the physical dims: a blocked activation is dense; a constant (or a
// plain activation) broadcasts its row-major logical strides, the channel stride split between
// the block index and the lane.
std::vector<int64_t> operand_strides(const ElementwiseTask& t, const Value* v) {
  const Shape shape = v->type.static_shape();
  if (t.blocked && !v->is_constant()) return dense_strides(physical(t));
  const std::vector<int64_t> s = *broadcast_strides(shape, t.shape);
  if (!t.blocked) return s;
  return {s[0], s[1] * kBlock, s[2], s[3], s[1]};
}

}  // namespace

std::string ElementwiseTask::key() const {
  std::string dims, ops;
  for (int64_t d : shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  for (const Node* n : io.nodes) {
    ops += (ops.empty() ? "" : ",") + n->op;
    // Casts differ by their types; float16 operands by their loads and stores.
    if (n->op == "Cast") ops += fmt::format(">{}", dtype_name(n->outputs[0]->type.dtype));
  }
  std::string halves;
  for (const Value* v : io.inputs) halves += is_half(v) ? "h" : "f";
  for (const Value* v : io.outputs) halves += is_half(v) ? "h" : "f";
  if (halves.find('h') != std::string::npos) ops += " io:" + halves;
  return fmt::format("elementwise_f32 {} {} {}", dims, blocked ? "nchw16c" : "nchw", ops);
}

std::optional<ElementwiseTask> elementwise_task_from_group(const Graph& g,
                                                           const FusedGroup& group) {
  ElementwiseTask t;
  t.io = group_io(g, group);
  if (t.io.nodes.empty() || t.io.outputs.empty()) return std::nullopt;
  const auto out_shape = static_float_shape(t.io.outputs[0]);
  if (!out_shape) return std::nullopt;
  t.shape = *out_shape;
  const LayoutSpec layout = t.io.outputs[0]->layout;
  t.blocked = layout.layout == Layout::kNCHWc;
  if (t.blocked && (layout.block != kBlock || t.shape.size() != 4 || t.shape[1] % kBlock != 0)) {
    return std::nullopt;
  }
  if (!t.blocked && layout.layout != Layout::kNCHW) return std::nullopt;
  for (const Value* o : t.io.outputs) {
    if (static_float_shape(o) != t.shape || o->layout != layout || !dense_output(g, o)) {
      return std::nullopt;
    }
  }
  for (const Node* n : t.io.nodes) {
    if (!n->def->has(kTraitElementwise) || n->outputs.size() != 1) return std::nullopt;
    std::vector<std::string> args;
    for (const Value* in : n->inputs) args.push_back(in ? "a" : "");
    // Only a Cast makes float16 (other ops would skip the rounding of their results).
    const Value* y = n->outputs[0];
    if (!(n->op == "Cast" ? static_float_shape(y) : static_f32_shape(y)) ||
        !elementwise_expr(*n, args)) {
      return std::nullopt;
    }
  }
  for (const Value* in : t.io.inputs) {
    // Constants are passed as float32 arrays; activations may be float16 storage.
    const auto s = in->is_constant() ? static_f32_shape(in) : static_float_shape(in);
    if (!s || !broadcast_strides(*s, t.shape)) return std::nullopt;
    if (in->is_constant()) continue;
    if (in->layout != layout || (t.blocked && *s != t.shape)) return std::nullopt;
  }
  return t;
}

bool ElementwiseTemplate::matches(const ElementwiseTask& t) {
  return !t.io.nodes.empty() && !t.io.outputs.empty() && !t.shape.empty() &&
         shape_numel(t.shape) > 0;
}

ScheduleSpace ElementwiseTemplate::space(const ElementwiseTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"unroll", "unroll of the innermost loop", {1, 2, 4, 8, 16}});
  return s;
}

bool ElementwiseTemplate::valid(const ElementwiseTask& t, const ScheduleConfig& cfg) {
  return matches(t) && cfg.in_space(space(t));
}

ScheduleConfig ElementwiseTemplate::default_config(const ElementwiseTask& t) {
  YOLOC_CHECK(matches(t), "elementwise template does not match {}", t.key());
  // The innermost loop is the 16 lanes of a block (one vector) or a plain row: unrolling more
  // than one vector's worth only grows code.
  return ScheduleConfig({{"unroll", t.blocked ? 1 : 4}});
}

CpuKernel ElementwiseTemplate::emit(const ElementwiseTask& t, const ScheduleConfig& cfg,
                                    const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "elementwise config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  const Shape dims = physical(t);
  std::map<const Value*, std::string> name;
  std::vector<LoopOperand> reads, writes;
  for (size_t k = 0; k < t.io.inputs.size(); ++k) {
    name[t.io.inputs[k]] = fmt::format("x{}", k);
    reads.push_back({fmt::format("in[{}]", k), 0, operand_strides(t, t.io.inputs[k]),
                     is_half(t.io.inputs[k])});
  }
  std::string body;
  for (const Node* n : t.io.nodes) {
    std::vector<std::string> args;
    for (const Value* in : n->inputs) args.push_back(in ? name.at(in) : "");
    const std::string v = fmt::format("v{}", n->outputs[0]->id);
    body += fmt::format("        const float {} = {};\n", v, *elementwise_expr(*n, args));
    name[n->outputs[0]] = v;
  }
  std::vector<std::string> values;
  for (size_t k = 0; k < t.io.outputs.size(); ++k) {
    writes.push_back({fmt::format("out[{}]", k), 0, dense_strides(dims), is_half(t.io.outputs[k])});
    values.push_back(name.at(t.io.outputs[k]));
  }
  CpuKernel k;
  k.symbol = symbol;
  k.work_items = loop_items(dims);
  k.source = fmt::format(
      "{}// {} | {}\nextern \"C\" void {}(const float* const* in, float* const* out, "
      "int64_t begin, int64_t end) {{\n{}}}\n",
      kScalarPrelude, t.key(), cfg.str(), symbol,
      emit_loop_nest(dims, reads, writes, body, values, "begin", "end", cfg.get("unroll")));
  return k;
}

}  // namespace yoloc::codegen::cpu
