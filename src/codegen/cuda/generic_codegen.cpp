// The Emitter's statements, element expressions and kernel text (generic_emitter.h).
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
#include "codegen/cuda/kernels/embedded.h"
#include "ir/op_registry.h"

namespace yoloc::codegen::cuda::generic_detail {

void Emitter::open(const std::string& head) {
  line(head + " {");
  ++indent_;
  memo_.emplace_back();
}

void Emitter::close() {
  memo_.pop_back();
  --indent_;
  line("}");
}

std::string Emitter::offset(const Idx& idx, const std::vector<int64_t>& strides) {
  std::string s;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (idx[d] == "0" || strides[d] == 0) continue;
    s += (s.empty() ? "" : " + ") +
         (strides[d] == 1 ? idx[d] : fmt::format("{} * {}", idx[d], strides[d]));
  }
  return s.empty() ? "0" : s;
}

Emitter::Idx Emitter::decompose(const std::string& r, const Shape& shape,
                                const std::vector<size_t>& order) {
  Idx idx(shape.size(), "0");
  const std::string rest = fresh("r");
  line(fmt::format("{} {} = {};", ix(), rest, r));
  for (size_t k = order.size(); k-- > 0;) {
    const size_t d = order[k];
    if (shape[d] == 1) continue;
    idx[d] = fresh("i");
    if (k == 0) {
      line(fmt::format("const {} {} = {};", ix(), idx[d], rest));
    } else {
      line(fmt::format("const {} {} = {} % {};", ix(), idx[d], rest, shape[d]));
      line(fmt::format("{} /= {};", rest, shape[d]));
    }
  }
  return idx;
}

std::tuple<int, const std::vector<int64_t>*, int64_t> Emitter::destination(const Value* v) const {
  if (root_->dest >= 0 && v == root_->v) {
    return {root_->dest, &t_.outputs[static_cast<size_t>(root_->dest)].strides, root_->base};
  }
  const auto it = output_.find(v);
  if (root_->dest < 0 && it != output_.end()) {
    return {static_cast<int>(it->second), &t_.outputs[it->second].strides, 0};
  }
  return {-1, nullptr, 0};
}

std::vector<size_t> Emitter::walk_order(const Value* v) const {
  const Shape s = v->type.static_shape();
  std::vector<size_t> order(s.size());
  for (size_t d = 0; d < s.size(); ++d) order[d] = d;
  const auto [k, st, base] = destination(v);
  if (st) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return (*st)[a] > (*st)[b]; });
  }
  return order;
}

void Emitter::store(const Value* v, const Idx& idx, const std::string& val) {
  const auto [k, st, base] = destination(v);
  if (st) {
    line(fmt::format("yc_store(out{} + ({}{}), {});", k, base ? fmt::format("{} + ", base) : "",
                     offset(idx, *st), val));
  }
  if (root_->dest < 0 && forced_.count(v)) {
    line(fmt::format("{} = {};", scratch_at(v, idx), val));
  }
}

std::string Emitter::scratch_at(const Value* v, const Idx& idx) const {
  const std::string off = offset(idx, dense_strides(v->type.static_shape()));
  if (is_int64(v)) return fmt::format("scratch_l[{} + {}]", scratch_base_.at(v) / 2, off);
  return fmt::format("scratch_f[{} + {}]", scratch_base_.at(v), off);
}

bool Emitter::emit_root(const Root& r, int64_t start) {
  memo_.assign(1, {});
  root_ = &r;
  const Node& n = *producer(r.v);
  const std::string e = start == 0 ? "e" : fmt::format("e - {}", start);
  if (n.op == "Softmax") return emit_softmax(n, e);
  if (n.op == "TopK") return emit_topk(n, e);
  const Idx idx = decompose(e, r.v->type.static_shape(), walk_order(r.v));
  const std::string val = at(r.v, idx);
  if (!why_.empty()) return false;
  store(r.v, idx, val);
  return true;
}

bool Emitter::emit_softmax(const Node& n, const std::string& e) {
  const Value *x = n.input(0), *y = n.outputs[0];
  const Shape s = y->type.static_shape();
  const auto cols = softmax_cols(n);
  const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", -1), s.size()));
  Shape rows = s;
  for (size_t d = axis; d < cols->first; ++d) rows[d] = 1;
  std::vector<size_t> order;
  for (size_t d : walk_order(y)) {
    if (d < axis || d >= cols->first) order.push_back(d);
  }
  const Idx row = decompose(e, rows, order);
  const std::string m = fresh("m"), sum = fresh("s"), inv = fresh("q");
  const auto loop = [&](const std::function<void(const Idx&, const std::string&)>& body) {
    const std::string a = fresh("l");
    open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), a, cols->second));
    Shape col_shape(s.size(), 1);
    std::vector<size_t> col_order;
    for (size_t d = axis; d < cols->first; ++d) col_shape[d] = s[d], col_order.push_back(d);
    Idx idx = row;
    const Idx c = decompose(a, col_shape, col_order);
    for (size_t d = axis; d < cols->first; ++d) idx[d] = c[d];
    body(idx, at(x, idx));
    close();
  };
  line(fmt::format("float {} = {};", m, kLowest));
  loop(
      [&](const Idx&, const std::string& v) { line(fmt::format("{0} = fmaxf({0}, {1});", m, v)); });
  line(fmt::format("float {} = 0.f;", sum));
  loop([&](const Idx&, const std::string& v) {
    line(fmt::format("{} += yc_exp({} - {});", sum, v, m));
  });
  line(fmt::format("const float {} = 1.f / {};", inv, sum));
  loop([&](const Idx& idx, const std::string& v) {
    const std::string o = fresh("t");
    line(fmt::format("const float {} = yc_exp({} - {}) * {};", o, v, m, inv));
    store(y, idx, o);
  });
  return why_.empty();
}

bool Emitter::emit_topk(const Node& n, const std::string& e) {
  const Value *x = n.input(0), *vals = n.outputs[0], *inds = n.outputs[1];
  const Shape xs = x->type.static_shape();
  const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", -1), xs.size()));
  const int64_t k = *topk_k(n);
  const bool largest = n.attrs.get_int("largest", 1) != 0;
  std::vector<size_t> order(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) order[d] = d;
  Idx idx = decompose(e, xs, order);
  const std::string me = idx[axis], v = at(x, idx), vn = fresh("n"), rank = fresh("k");
  line(fmt::format("const bool {} = {} != {};", vn, v, v));
  line(fmt::format("{} {} = 0;", ix(), rank));
  const std::string j = fresh("l");
  open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), j, xs[axis]));
  Idx other = idx;
  other[axis] = j;
  const std::string u = at(x, other), un = fresh("n");
  line(fmt::format("const bool {} = {} != {};", un, u, u));
  // Whether element j comes before this one.
  line(fmt::format("{} += {} != {} ? {} : (!{} && {} != {}) ? ({} {} {}) : ({} < {});", rank, un,
                   vn, largest ? un : vn, un, u, v, u, largest ? ">" : "<", v, j, me));
  line(fmt::format("if ({} >= {}) break;", rank, k));
  close();
  open(fmt::format("if ({} < {})", rank, k));
  Idx out = idx;
  out[axis] = rank;
  store(vals, out, v);
  store(inds, out, fmt::format("static_cast<yc_i64>({})", me));
  close();
  return why_.empty();
}

std::string Emitter::at(const Value* v, const Idx& idx) {
  if (!why_.empty()) return "0.f";
  std::string key = std::to_string(v->id);
  for (const std::string& i : idx) key += "|" + i;
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
    const auto f = it->find(key);
    if (f != it->end()) return f->second;
  }
  const std::string r = compute(v, idx);
  memo_.back()[key] = r;
  return r;
}

std::string Emitter::let(const std::string& expr, const Value* v) {
  const std::string t = fresh("t");
  line(fmt::format("const {} {} = {};", ctype(v), t, expr));
  return t;
}

std::string Emitter::compute(const Value* v, const Idx& idx) {
  if (baked_scalar(v)) return scalar_literal(v);
  if (const auto it = constant_.find(v); it != constant_.end()) {
    return let(
        fmt::format("c{}[{}]", it->second, offset(idx, dense_strides(v->type.static_shape()))));
  }
  if (const auto it = input_.find(v); it != input_.end()) {
    return let(fmt::format("yc_load(in{} + ({}))", it->second,
                           offset(idx, t_.inputs[it->second].strides)));
  }
  if (forced_.count(v) && v != root_->v) return let(scratch_at(v, idx), v);
  const Node* n = producer(v);
  if (!n) return fail("value " + v->name + " is not available"), "0.f";
  const std::string& op = n->op;
  if (is_alias(op)) return at(n->input(0), reshape_index(*n, idx));
  if (n->def && n->def->has(kTraitElementwise)) return elementwise(*n, idx);
  if (op == "Transpose") return transpose(*n, idx);
  if (op == "Slice") return slice(*n, idx);
  if (op == "Split") return split(*n, v, idx);
  if (op == "Concat") return concat(*n, idx);
  if (op == "Resize") return resize(*n, idx);
  if (op == "Conv") return conv(*n, idx);
  if (op == "MatMul") return matmul(*n, idx);
  if (op == "MaxPool" || op == "AveragePool") return pool(*n, idx);
  if (op == "Gather") return gather(*n, idx);
  if (op == "GatherElements") return gather_elements(*n, idx);
  if (op == "Tile") return tile(*n, idx);
  if (op == "ReduceMax" || op == "ReduceMin") return reduce_extremum(*n, idx);
  return fail(n->label() + ": op not supported"), "0.f";
}

std::string Emitter::elementwise(const Node& n, const Idx& idx) {
  const Shape ys = n.outputs[0]->type.static_shape();
  std::vector<std::string> args;
  for (const Value* in : n.inputs) {
    if (!in) {
      args.emplace_back();
      continue;
    }
    const Shape xs = in->type.static_shape();
    if (xs.size() > ys.size()) return fail(n.label() + ": broadcast"), "0.f";
    Idx xi(xs.size(), "0");
    const size_t lead = ys.size() - xs.size();
    for (size_t d = 0; d < xs.size(); ++d) {
      if (xs[d] == ys[lead + d]) {
        xi[d] = xs[d] == 1 ? "0" : idx[lead + d];
      } else if (xs[d] != 1) {
        return fail(n.label() + ": broadcast"), "0.f";
      }
    }
    args.push_back(at(in, xi));
  }
  auto e = cpu::elementwise_expr(n, args);
  if (!e) return fail(n.label() + ": elementwise op not supported"), "0.f";
  cpu::replace_all(*e, "std::", "yc_m::");
  return let(*e, n.outputs[0]);
}

std::string Emitter::kernel_source(const std::string& sym, int64_t threads, int64_t items,
                                   int64_t blocks, int64_t work, const std::string& body) const {
  std::string params, casts;
  const auto param = [&](const std::string& p) { params += (params.empty() ? "" : ", ") + p; };
  for (size_t k = 0; k < t_.inputs.size(); ++k) {
    param(fmt::format("const void* __restrict__ p_in{}", k));
    const std::string ty = cuda_storage_type(t_.inputs[k].dtype);
    casts +=
        fmt::format("  const {0}* __restrict__ in{1} = static_cast<const {0}*>(p_in{1});\n", ty, k);
  }
  for (size_t k = 0; k < t_.constants.size(); ++k) {
    param(fmt::format("const float* __restrict__ c{}", k));
  }
  for (size_t k = 0; k < t_.outputs.size(); ++k) {
    param(fmt::format("void* __restrict__ p_out{}", k));
    const std::string ty = cuda_storage_type(t_.outputs[k].dtype);
    casts += fmt::format("  {0}* __restrict__ out{1} = static_cast<{0}*>(p_out{1});\n", ty, k);
  }
  param("void* __restrict__ scratch");
  if (scratch_floats_ > 0) {
    casts += "  float* __restrict__ scratch_f = static_cast<float*>(scratch);\n";
  }
  if (int64_scratch_) {
    casts += "  yc_i64* __restrict__ scratch_l = static_cast<yc_i64*>(scratch);\n";
  }
  return fmt::format(fmt::runtime(cuh::generic_kernel), fmt::arg("threads", threads),
                     fmt::arg("sym", sym), fmt::arg("params", params), fmt::arg("casts", casts),
                     fmt::arg("ix", ix()), fmt::arg("items", items),
                     fmt::arg("stride", fmt::format("{}{}", blocks * threads, wide_ ? "ll" : "")),
                     fmt::arg("work", work), fmt::arg("body", body));
}

}  // namespace yoloc::codegen::cuda::generic_detail
