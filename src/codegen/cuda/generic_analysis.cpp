// The generic template's helpers and the Emitter's analysis of a group (generic_emitter.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <variant>

#include "codegen/cpu/emit_util.h"
#include "codegen/cpu/resize_template.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/generic_emitter.h"
#include "ir/op_registry.h"

namespace yoloc::codegen::cuda::generic_detail {

bool is_alias(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity";
}

bool reads_int64(const Node& n) {
  static const std::set<std::string> kOps = {
      "Transpose",      "Slice", "Split",     "Concat",    "Gather",
      "GatherElements", "Tile",  "ReduceMax", "ReduceMin", "TopK"};
  return is_alias(n.op) || kOps.count(n.op) || (n.def && n.def->has(kTraitElementwise));
}

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::optional<Shape> static_shape(const Value* v) {
  if (!v || !v->type.has_rank || !v->type.is_static()) return std::nullopt;
  return v->type.static_shape();
}

std::vector<size_t> data_slots(const Node& n) {
  size_t count = 1;
  if (n.def && n.def->has(kTraitElementwise)) count = n.inputs.size();
  if (n.op == "Concat") count = n.inputs.size();
  if (n.op == "Conv") count = 3;
  if (n.op == "MatMul" || n.op == "Gather" || n.op == "GatherElements") count = 2;
  std::vector<size_t> s;
  for (size_t i = 0; i < std::min(count, n.inputs.size()); ++i) {
    if (n.input(i)) s.push_back(i);
  }
  return s;
}

bool is_loop_op(const std::string& op) {
  return op == "Conv" || op == "MatMul" || op == "MaxPool" || op == "AveragePool" ||
         op == "Softmax" || op == "ReduceMax" || op == "ReduceMin" || op == "TopK";
}

std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "3.402823466e+38f" : kLowest;
  std::string s = fmt::format("{:.9g}", static_cast<float>(v));
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string int_literal(int64_t v) {
  return v == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807LL - 1)"
                                                  : fmt::format("{}LL", v);
}

std::string scalar_literal(const Value* v) {
  return is_int64(v) ? int_literal(v->data.to_int64s().at(0))
                     : float_literal(v->data.to_doubles().at(0));
}

std::optional<Window> pool_window(const Node& n) {
  const auto xs = static_shape(n.input(0));
  const auto k = n.attrs.get_ints("kernel_shape", {});
  const auto s = n.attrs.get_ints("strides", {1, 1});
  const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto d = n.attrs.get_ints("dilations", {1, 1});
  if (!xs || xs->size() != 4 || k.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2 ||
      n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" || n.outputs.size() != 1) {
    return std::nullopt;
  }
  return Window{n.input(0), k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
}

bool same_size_max_pool(const Node& n) {
  if (n.op != "MaxPool") return false;
  const auto w = pool_window(n);
  const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  return w && w->sh == 1 && w->sw == 1 && w->dh == 1 && w->dw == 1 && p[0] + p[2] == w->kh - 1 &&
         p[1] + p[3] == w->kw - 1;
}

std::string attr_text(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return "tensor";
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<float>> ||
                             std::is_same_v<T, std::vector<std::string>>) {
          return fmt::format("[{}]", fmt::join(x, ","));
        } else {
          return fmt::format("{}", x);
        }
      },
      v);
}

std::string shape_str(const Value* v) {
  std::string s;
  for (const Dim& d : v->type.dims) s += fmt::format("{}{}", s.empty() ? "" : "x", d.value);
  return s;
}

std::string operand_str(const CudaOperand& o) {
  return fmt::format("{}:{}", short_dtype_name(o.dtype), fmt::join(o.strides, ","));
}

bool Emitter::fail(const std::string& what) {
  if (why_.empty()) why_ = what;
  return false;
}

bool Emitter::analyse() {
  for (size_t k = 0; k < t_.inputs.size(); ++k) input_[t_.inputs[k].value] = k;
  for (size_t k = 0; k < t_.constants.size(); ++k) constant_[t_.constants[k]] = k;
  for (size_t k = 0; k < t_.outputs.size(); ++k) output_[t_.outputs[k].value] = k;
  int64_t largest = 0;
  const auto check_operand = [&](const CudaOperand& o) {
    const auto s = static_shape(o.value);
    if (!s || s->size() != o.strides.size() || !is_storage_dtype(o.dtype)) return false;
    int64_t end = 1;
    for (size_t d = 0; d < s->size(); ++d) {
      if ((*s)[d] > 0 && o.strides[d] < 0) return false;
      end += ((*s)[d] - 1) * o.strides[d];
    }
    largest = std::max(largest, end);
    return true;
  };
  for (const CudaOperand& o : t_.inputs) {
    if (!check_operand(o)) return fail("input " + o.value->name + ": operand not supported");
  }
  for (const CudaOperand& o : t_.outputs) {
    if (!check_operand(o)) return fail("output " + o.value->name + ": operand not supported");
  }
  for (const Node* n : t_.nodes) {
    for (const Value* o : n->outputs) {
      const auto s = static_shape(o);
      if (!s || !(is_float(o->type.dtype) || is_int64(o))) {
        return fail(n->label() + ": not static float or int64 data");
      }
      producer_[o] = n;
      largest = std::max(largest, shape_numel(*s));
    }
    for (size_t i : data_slots(*n)) {
      const Value* x = n->input(i);
      if (x->is_constant()) {
        if (baked_scalar(x) || constant_.count(x)) continue;
        return fail(n->label() + ": constant " + x->name + " not passed");
      }
      if (!is_float(x->type.dtype) && !(is_int64(x) && reads_int64(*n))) {
        return fail(fmt::format("{}: reads {} data", n->label(), dtype_name(x->type.dtype)));
      }
    }
  }
  // Which values are materialised in scratch: inputs of loop nodes that hold loops
  // themselves, and Softmax results read in the group.
  for (const Node* n : t_.nodes) {
    if (n->op == "TopK") {
      // Each thread counts the elements of its row that rank before its own: the row is read
      // whole by every thread, from memory.
      if (n->outputs.size() != 2) return fail(n->label() + ": outputs");
      forced_.insert(n->outputs.begin(), n->outputs.end());
      if (producer(n->input(0))) forced_.insert(n->input(0));
    }
    if (n->op == "Softmax") {
      for (const Node* u : users(n->outputs[0])) {
        if (u) forced_.insert(n->outputs[0]);
      }
    }
    if (!is_loop_op(n->op)) continue;
    std::vector<const Value*> reads;
    if (n->op == "MaxPool") {
      reads.push_back(pool_base(*n));
    } else {
      for (size_t i : data_slots(*n)) reads.push_back(n->input(i));
    }
    for (const Value* x : reads) {
      if (loopy(x)) forced_.insert(x);
    }
  }
  for (const Node* n : t_.nodes) {
    for (const Value* o : n->outputs) {
      if (forced_.count(o)) {
        // Counted in floats: an int64 element takes two (bases stay 64-float aligned).
        const int64_t floats = shape_numel(o->type.static_shape()) * (is_int64(o) ? 2 : 1);
        int64_scratch_ = int64_scratch_ || is_int64(o);
        scratch_base_[o] = scratch_floats_;
        scratch_floats_ += cpu::ceil_div(floats, 64) * 64;
      }
      if (n->op == "TopK" && o == n->outputs[1]) {
        level_[o] = level_.at(n->outputs[0]);  // made by the root of the values
        continue;
      }
      if (output_.count(o) && n->op == "Concat" && n->is_view()) {
        // The concat's buffer is the output: its inputs made here are written into their
        // slices; those from outside are in place already (their producers wrote them).
        if (forced_.count(o)) return fail(n->label() + ": view Concat read in the group");
        const std::vector<int64_t>& st = t_.outputs[output_.at(o)].strides;
        const auto axis = static_cast<size_t>(norm_axis(n->attrs.get_int("axis", 0), st.size()));
        if (axis >= st.size()) return fail(n->label() + ": axis");
        int64_t first = 0;
        for (const Value* x : n->inputs) {
          if (producer(x)) {
            if (!add_root(x, static_cast<int>(output_.at(o)), first * st[axis])) return false;
          } else if (!input_.count(x)) {
            return fail(n->label() + ": view Concat of a constant");
          }
          first += x->type.static_shape().at(axis);
        }
        continue;
      }
      if ((forced_.count(o) || output_.count(o)) && !add_root(o, -1, 0)) return false;
    }
  }
  int64_t work = 0;
  for (const Root& r : roots_) work += r.work;
  largest = std::max({largest, scratch_floats_, 2 * work});
  wide_ = largest >= (int64_t{1} << 30);
  return why_.empty();
}

bool Emitter::add_root(const Value* v, int dest, int64_t base) {
  Root r;
  r.v = v;
  r.dest = dest;
  r.base = base;
  r.work = shape_numel(v->type.static_shape());
  const Node& n = *producer(v);
  if (n.op == "Softmax") {
    const auto cols = softmax_cols(n);
    if (!cols) return fail(n.label() + ": softmax axis");
    r.work /= std::max<int64_t>(1, cols->second);
  }
  if (n.op == "TopK") {
    const auto k = topk_k(n);
    if (!k) return fail(n.label() + ": K, axis or indices type");
    r.work = *k == 0 ? 0 : shape_numel(n.input(0)->type.static_shape());
  }
  for (const Value* d : reads_of(v)) r.level = std::max(r.level, level_.at(d) + 1);
  if (dest < 0) level_[v] = r.level;
  max_level_ = std::max(max_level_, r.level);
  roots_.push_back(r);
  return true;
}

std::vector<const Node*> Emitter::users(const Value* v) const {
  std::vector<const Node*> u;
  for (const Node* n : t_.nodes) {
    for (size_t i : data_slots(*n)) {
      if (n->input(i) == v) {
        u.push_back(n);
        break;
      }
    }
  }
  return u;
}

const Node* Emitter::producer(const Value* v) const {
  const auto it = producer_.find(v);
  return it == producer_.end() ? nullptr : it->second;
}

const Value* Emitter::pool_base(const Node& n) const {
  const Value* x = n.input(0);
  if (!same_size_max_pool(n)) return x;
  while (const Node* p = producer(x)) {
    if (!same_size_max_pool(*p) || forced_.count(x)) break;
    x = p->input(0);
  }
  return x;
}

bool Emitter::loopy(const Value* v) const {
  const Node* n = producer(v);
  if (!n || forced_.count(v)) return false;
  if (is_loop_op(n->op)) return true;
  for (size_t i : data_slots(*n)) {
    if (loopy(n->input(i))) return true;
  }
  return false;
}

std::set<const Value*> Emitter::reads_of(const Value* v) const {
  std::set<const Value*> out;
  std::vector<const Value*> stack;
  const Node* n = producer(v);
  const auto push_inputs = [&](const Node& m) {
    if (m.op == "MaxPool") {
      stack.push_back(pool_base(m));
    } else {
      for (size_t i : data_slots(m)) stack.push_back(m.input(i));
    }
  };
  push_inputs(*n);
  std::set<const Value*> seen;
  while (!stack.empty()) {
    const Value* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (forced_.count(x)) {
      out.insert(x);
    } else if (const Node* p = producer(x)) {
      push_inputs(*p);
    }
  }
  return out;
}

std::optional<std::pair<size_t, int64_t>> Emitter::softmax_cols(const Node& n) const {
  const Shape s = n.outputs[0]->type.static_shape();
  const int64_t axis = norm_axis(n.attrs.get_int("axis", -1), s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return std::nullopt;
  const bool flat = n.attrs.get_int("coerce_2d", 0) != 0;
  int64_t count = 1;
  const size_t end = flat ? s.size() : static_cast<size_t>(axis) + 1;
  for (size_t d = static_cast<size_t>(axis); d < end; ++d) count *= s[d];
  return std::make_pair(end, count);
}

std::optional<int64_t> Emitter::topk_k(const Node& n) const {
  const Shape xs = n.input(0)->type.static_shape();
  const int64_t axis = norm_axis(n.attrs.get_int("axis", -1), xs.size());
  const Value* kv = n.input(1);
  if (axis < 0 || axis >= static_cast<int64_t>(xs.size()) || !kv || !kv->known() ||
      kv->known()->numel() != 1 || !is_int64(n.outputs[1])) {
    return std::nullopt;
  }
  const int64_t k = kv->known()->to_int64s()[0];
  if (k < 0 || k > xs[static_cast<size_t>(axis)]) return std::nullopt;
  return k;
}

}  // namespace yoloc::codegen::cuda::generic_detail
