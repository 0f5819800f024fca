#include "codegen/cpu/tail_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ir/op_registry.h"

namespace yoloc::codegen::cpu {

namespace tail {

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

bool is_int64(const Value* v) { return v && v->type.dtype == DType::kInt64; }

std::optional<Shape> static_tail_shape(const Value* v) {
  if (is_int64(v) && v->type.has_rank && v->type.is_static()) return v->type.static_shape();
  return static_float_shape(v);
}

std::optional<std::vector<int64_t>> known_ints(const Value* v) {
  if (!v || !v->known()) return std::nullopt;
  return v->known()->to_int64s();
}

}  // namespace tail

namespace {

using tail::is_int64;
using tail::known_ints;
using tail::norm_axis;
using tail::static_tail_shape;

bool is_alias(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity";
}

/// The C++ element type of a value's buffer (float16 storage hides behind float pointers).
const char* ctype(const Value* v) { return is_int64(v) ? "int64_t" : "float"; }

/// How many leading inputs of n are data the kernel reads (the rest, such as shapes, slice
/// bounds, K or axes, are integer constants read at compile time).
size_t data_inputs(const Node& n) {
  if (n.def->has(kTraitElementwise) || n.op == "Concat") return n.inputs.size();
  if (n.op == "Conv") return 3;
  if (n.op == "MatMul" || n.op == "Gather" || n.op == "GatherElements") return 2;
  return 1;
}

// Emits the tail's code node by node; nullopt as soon as something is unsupported.
class Emitter {
 public:
  Emitter(const TailTask& t, int64_t unroll) : t_(t), unroll_(unroll) {}

  std::optional<std::string> run() {
    for (size_t k = 0; k < t_.args.size(); ++k) {
      if (!bind_input(t_.args[k], k)) return std::nullopt;
    }
    for (const Node* n : t_.io.nodes) {
      for (const Value* o : n->outputs) {
        // Only a Cast makes float16 (other ops would skip the rounding of their results).
        if (!(n->op == "Cast" || is_int64(o) ? static_tail_shape(o) : static_f32_shape(o))) {
          return std::nullopt;
        }
      }
      if (!emit_node(*n)) return std::nullopt;
    }
    for (const auto& [v, k] : blocked_outputs_) store_blocked(v, k);
    return code_;
  }

 private:
  static std::string rd(const Value* v) { return fmt::format("v{}", v->id); }
  static std::string wr(const Value* v) { return fmt::format("w{}", v->id); }
  /// The shape the kernel sees: one image of an activation for a per-image task.
  Shape shape(const Value* v) const {
    Shape s = v->type.static_shape();
    if (t_.images > 1 && !v->is_constant() && !s.empty()) s[0] = 1;
    return s;
  }

  bool bind_input(const Value* v, size_t k) {
    const Shape s = shape(v);
    if (is_half(v) && v->layout.layout != Layout::kNCHW) return false;
    if (is_int64(v)) {
      if (v->layout.layout != Layout::kNCHW) return false;
      code_ += fmt::format("  const int64_t* {} = reinterpret_cast<const int64_t*>(in[{}]);\n",
                           rd(v), k);
      bound_.insert(v);
      return true;
    }
    if (v->is_constant() || v->layout.layout == Layout::kNCHW) {
      code_ += fmt::format("  const float* {} = in[{}];\n", rd(v), k);
      bound_.insert(v);
      return true;
    }
    if (v->layout.layout != Layout::kNCHWc || s.size() != 4 || s[1] % v->layout.block != 0) {
      return false;
    }
    // NCHWc -> NCHW: loop over the blocked dims, scatter to the plain offsets.
    const int64_t b = v->layout.block, hw = s[2] * s[3];
    const Shape dims = {s[0], s[1] / b, s[2], s[3], b};
    code_ += fmt::format("  static thread_local float* plain{0} = nullptr;\n"
                         "  static thread_local long plain{0}_n = 0;\n"
                         "  float* {2} = yc_scratch<{1}>(plain{0}, plain{0}_n);\n",
                         k, shape_numel(s), wr(v));
    code_ += emit_loop_nest(dims, {{fmt::format("in[{}]", k), 0, dense_strides(dims)}},
                            {{wr(v), 0, {s[1] * hw, b * hw, s[3], 1, hw}}}, "", {"x0"}, "0",
                            std::to_string(loop_items(dims)), unroll_);
    code_ += fmt::format("  const float* {} = {};\n", rd(v), wr(v));
    bound_.insert(v);
    return true;
  }

  // An int64 constant the kernel reads as data (a divisor, gather indices): baked into the code.
  bool bind_baked(const Value* v) {
    const auto ints = known_ints(v);
    if (!is_int64(v) || !ints || ints->empty() || ints->size() > kMaxBaked) return false;
    std::string list;
    for (int64_t i : *ints) list += fmt::format("{}{}", list.empty() ? "" : ", ", i);
    code_ += fmt::format("  static const int64_t {}[] = {{{}}};\n", rd(v), list);
    bound_.insert(v);
    return true;
  }
  static constexpr size_t kMaxBaked = 1 << 16;

  // NCHWc output k from v's plain buffer, once everything is computed: the inverse of the
  // re-layout of bind_input.
  void store_blocked(const Value* v, size_t k) {
    const Shape s = shape(v);
    const int64_t b = v->layout.block, hw = s[2] * s[3];
    const Shape dims = {s[0], s[1] / b, s[2], s[3], b};
    code_ += fmt::format("  // {} to NCHW{}c\n", v->name, b);
    code_ += emit_loop_nest(dims, {{rd(v), 0, {s[1] * hw, b * hw, s[3], 1, hw}}},
                            {{fmt::format("out[{}]", k), 0, dense_strides(dims)}}, "", {"x0"}, "0",
                            std::to_string(loop_items(dims)), unroll_);
  }

  // A buffer for v: the kernel's output when v leaves the group (unless it is stored in NCHWc:
  // then it is computed plain and re-laid at the end), else a scratch buffer of the thread that
  // keeps its pages from run to run (fresh vectors cost page faults every run).
  void define(const Value* v) {
    const auto it = std::find(t_.io.outputs.begin(), t_.io.outputs.end(), v);
    if (it != t_.io.outputs.end() && v->layout.layout == Layout::kNCHWc) {
      blocked_outputs_.emplace_back(v, static_cast<size_t>(it - t_.io.outputs.begin()));
    }
    const std::string type = ctype(v);
    if (it != t_.io.outputs.end() && v->layout.layout != Layout::kNCHWc) {
      code_ += fmt::format("  {0}* {1} = reinterpret_cast<{0}*>(out[{2}]);\n", type, wr(v),
                           it - t_.io.outputs.begin());
    } else {
      // Scratch is counted in floats: an int64 element takes two.
      const int64_t floats = shape_numel(shape(v)) * (is_int64(v) ? 2 : 1);
      code_ += fmt::format("  static thread_local float* buf{0} = nullptr;\n"
                           "  static thread_local long buf{0}_n = 0;\n"
                           "  {3}* {2} = reinterpret_cast<{3}*>(yc_scratch<{1}>(buf{0}, buf{0}_n));\n",
                           v->id, floats, wr(v), type);
    }
    code_ += fmt::format("  const {}* {} = {};\n", type, rd(v), wr(v));
    bound_.insert(v);
  }

  void copy(const Shape& dims, LoopOperand from, LoopOperand to) {
    code_ += emit_loop_nest(dims, {std::move(from)}, {std::move(to)}, "", {"x0"}, "0",
                            std::to_string(loop_items(dims)), unroll_);
  }

  bool emit_node(const Node& n) {
    if (n.outputs.size() != 1 && n.op != "Split" && n.op != "TopK") return false;
    const Value* y = n.outputs[0];
    // Data operands are arrays the kernel holds (float32, float16 storage, int64; small int64
    // constants are baked in); other integer constants (shapes, slice bounds) are read at
    // compile time by the emitters that take them.
    const bool float_only = n.op == "Softmax" || n.op == "Conv" || n.op == "MatMul";
    for (size_t i = 0; i < std::min(data_inputs(n), n.inputs.size()); ++i) {
      const Value* in = n.input(i);
      if (in && !bound_.count(in) && !(in->is_constant() && bind_baked(in))) return false;
      // float16 buffers (raw 16-bit storage) are read and written by elementwise loops only.
      if (is_half(in) && !n.def->has(kTraitElementwise)) return false;
      if (is_int64(in) && float_only) return false;
    }
    if (is_half(y) && !n.def->has(kTraitElementwise)) return false;
    code_ += fmt::format("  // {}\n", n.label());
    if (is_alias(n.op)) {
      const bool leaves =
          std::find(t_.io.outputs.begin(), t_.io.outputs.end(), y) != t_.io.outputs.end();
      if (!leaves) {
        code_ += fmt::format("  const {}* {} = {};\n", ctype(y), rd(y), rd(n.input(0)));
        bound_.insert(y);
        return true;
      }
      define(y);
      const Shape s = {shape_numel(shape(y))};
      copy(s, {rd(n.input(0)), 0, {1}}, {wr(y), 0, {1}});
      return true;
    }
    if (n.def->has(kTraitElementwise)) return elementwise(n);
    if (n.op == "Transpose") return transpose(n);
    if (n.op == "Slice") return slice(n);
    if (n.op == "Concat") return concat(n);
    if (n.op == "Split") return split(n);
    if (n.op == "Softmax") return softmax(n);
    if (n.op == "Conv") return conv(n);
    if (n.op == "MatMul") return matmul(n);
    if (n.op == "ReduceMax" || n.op == "ReduceMin") return reduce_extremum(n);
    if (n.op == "ArgMax" || n.op == "ArgMin") return arg_extremum(n);
    if (n.op == "TopK") return topk(n);
    if (n.op == "Gather") return gather(n);
    if (n.op == "GatherElements") return gather_elements(n);
    if (n.op == "Tile") return tile(n);
    return false;
  }

  bool elementwise(const Node& n) {
    const Value* y = n.outputs[0];
    const Shape s = shape(y);
    std::vector<LoopOperand> reads;
    std::vector<std::string> args;
    for (const Value* in : n.inputs) {
      if (!in) {
        args.emplace_back();
        continue;
      }
      if (!static_tail_shape(in)) return false;
      const auto st = broadcast_strides(shape(in), s);
      if (!st) return false;
      args.push_back(fmt::format("x{}", reads.size()));
      reads.push_back({rd(in), 0, *st, is_half(in)});
    }
    const auto e = elementwise_expr(n, args);
    if (!e) return false;
    define(y);
    code_ += emit_loop_nest(s, reads, {{wr(y), 0, dense_strides(s), is_half(y)}},
                            fmt::format("        const {} y = {};\n", ctype(y), *e), {"y"}, "0",
                            std::to_string(loop_items(s)), unroll_);
    return true;
  }

  bool transpose(const Node& n) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape xs = shape(x), ys = shape(y);
    std::vector<int64_t> perm = n.attrs.get_ints("perm", {});
    if (perm.empty()) {
      for (size_t i = xs.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    if (perm.size() != xs.size()) return false;
    const std::vector<int64_t> xst = dense_strides(xs);
    std::vector<int64_t> st;
    for (int64_t p : perm) st.push_back(xst.at(static_cast<size_t>(p)));
    define(y);
    copy(ys, {rd(x), 0, st}, {wr(y), 0, dense_strides(ys)});
    return true;
  }

  bool slice(const Node& n) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape xs = shape(x), ys = shape(y);
    const auto ints = [&](size_t i) -> std::optional<std::vector<int64_t>> {
      const Value* v = n.input(i);
      if (!v) return std::vector<int64_t>{};
      if (!v->known()) return std::nullopt;
      std::vector<int64_t> out;
      for (double d : v->known()->to_doubles()) out.push_back(static_cast<int64_t>(d));
      return out;
    };
    const auto starts = ints(1), axes = ints(3), steps = ints(4);
    if (!starts || !axes || !steps) return false;
    const std::vector<int64_t> xst = dense_strides(xs);
    std::vector<int64_t> st = xst;
    int64_t base = 0;
    for (size_t i = 0; i < starts->size(); ++i) {
      const int64_t d = axes->empty() ? static_cast<int64_t>(i) : norm_axis((*axes)[i], xs.size());
      if (d < 0 || d >= static_cast<int64_t>(xs.size())) return false;
      const int64_t dim = xs[static_cast<size_t>(d)];
      const int64_t step = steps->empty() ? 1 : (*steps)[i];
      int64_t s0 = (*starts)[i] < 0 ? (*starts)[i] + dim : (*starts)[i];
      s0 = step > 0 ? std::clamp<int64_t>(s0, 0, dim) : std::clamp<int64_t>(s0, 0, dim - 1);
      base += s0 * xst[static_cast<size_t>(d)];
      st[static_cast<size_t>(d)] = step * xst[static_cast<size_t>(d)];
    }
    define(y);
    if (shape_numel(ys) > 0) copy(ys, {rd(x), base, st}, {wr(y), 0, dense_strides(ys)});
    return true;
  }

  bool concat(const Node& n) {
    const Value* y = n.outputs[0];
    const Shape ys = shape(y);
    const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", 0), ys.size()));
    if (axis >= ys.size()) return false;
    define(y);
    const std::vector<int64_t> yst = dense_strides(ys);
    int64_t offset = 0;
    for (const Value* x : n.inputs) {
      const Shape xs = shape(x);
      if (shape_numel(xs) > 0)
        copy(xs, {rd(x), 0, dense_strides(xs)}, {wr(y), offset * yst[axis], yst});
      offset += xs.at(axis);
    }
    return true;
  }

  bool split(const Node& n) {
    const Value* x = n.input(0);
    const Shape xs = shape(x);
    const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", 0), xs.size()));
    if (axis >= xs.size()) return false;
    const std::vector<int64_t> xst = dense_strides(xs);
    int64_t offset = 0;
    for (const Value* y : n.outputs) {
      const Shape ys = shape(y);
      define(y);
      if (shape_numel(ys) > 0)
        copy(ys, {rd(x), offset * xst[axis], xst}, {wr(y), 0, dense_strides(ys)});
      offset += ys.at(axis);
    }
    return true;
  }

  bool softmax(const Node& n) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape s = shape(x);
    const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", -1), s.size()));
    if (axis >= s.size()) return false;
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= s[i];
    for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
    define(y);
    // Running max and sum per position of the inner dims, so every loop runs along contiguous
    // memory and vectorises.
    code_ += fmt::format(R"(  {{
    static thread_local float *m_{5} = nullptr, *sum_{5} = nullptr;
    static thread_local long m_{5}_n = 0, sum_{5}_n = 0;
    float* m = yc_scratch<{2}>(m_{5}, m_{5}_n);
    float* sum = yc_scratch<{2}>(sum_{5}, sum_{5}_n);
    for (int64_t o = 0; o < {0}; ++o) {{
      const float* xp = {3} + o * {1} * {2};
      float* yp = {4} + o * {1} * {2};
      for (int64_t i = 0; i < {2}; ++i) m[i] = -INFINITY, sum[i] = 0.f;
      for (int64_t a = 0; a < {1}; ++a)
        for (int64_t i = 0; i < {2}; ++i) m[i] = yc_max(m[i], xp[a * {2} + i]);
      for (int64_t a = 0; a < {1}; ++a)
        for (int64_t i = 0; i < {2}; ++i) sum[i] += (yp[a * {2} + i] = yc_exp(xp[a * {2} + i] - m[i]));
      for (int64_t a = 0; a < {1}; ++a)
        for (int64_t i = 0; i < {2}; ++i) yp[a * {2} + i] /= sum[i];
    }}
  }}
)",
                         outer, s[axis], inner, rd(x), wr(y), y->id);
    return true;
  }

  bool conv(const Node& n) {
    const Value *x = n.input(0), *w = n.input(1), *b = n.input(2), *y = n.outputs[0];
    if (!static_f32_shape(w) || (b && !static_f32_shape(b))) return false;
    const Shape xs = shape(x), ws = shape(w), ys = shape(y);
    const auto st = n.attrs.get_ints("strides", {1, 1});
    const auto pd = n.attrs.get_ints("pads", {0, 0, 0, 0});
    const auto dl = n.attrs.get_ints("dilations", {1, 1});
    const int64_t g = n.attrs.get_int("group", 1);
    if (xs.size() != 4 || st.size() != 2 || pd.size() != 4 || dl.size() != 2 || g < 1 ||
        n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" || xs[1] != ws[1] * g) {
      return false;
    }
    define(y);
    if (ws[2] == 1 && ws[3] == 1 && st == std::vector<int64_t>{1, 1} && g == 1 &&
        pd == std::vector<int64_t>{0, 0, 0, 0}) {
      // Pointwise (the YOLOX head's 4- and 1-channel convs): rows of the output accumulate
      // whole input rows, so the loops run along contiguous pixels and vectorise.
      code_ += fmt::format(
          R"(  for (int64_t n = 0; n < {N}; ++n)
    for (int64_t k = 0; k < {K}; ++k) {{
      float* row = {YP} + (n * {K} + k) * {P};
      for (int64_t p = 0; p < {P}; ++p) row[p] = {BIAS};
      for (int64_t c = 0; c < {C}; ++c) {{
        const float wv = {WP}[k * {C} + c];
        const float* xr = {XP} + (n * {C} + c) * {P};
        for (int64_t p = 0; p < {P}; ++p) row[p] += wv * xr[p];
      }}
    }}
)",
          fmt::arg("N", xs[0]), fmt::arg("K", ys[1]), fmt::arg("C", xs[1]),
          fmt::arg("P", ys[2] * ys[3]), fmt::arg("BIAS", b ? rd(b) + "[k]" : "0.f"),
          fmt::arg("WP", rd(w)), fmt::arg("XP", rd(x)), fmt::arg("YP", wr(y)));
      return true;
    }
    code_ += fmt::format(
        R"(  for (int64_t n = 0; n < {N}; ++n)
    for (int64_t k = 0; k < {K}; ++k)
      for (int64_t oh = 0; oh < {OH}; ++oh)
        for (int64_t ow = 0; ow < {OW}; ++ow) {{
          const int64_t g0 = k / ({K} / {G}) * {CG};
          float acc = {BIAS};
          for (int64_t c = 0; c < {CG}; ++c)
            for (int64_t r = 0; r < {KH}; ++r) {{
              const int64_t ih = oh * {SH} - {PH} + r * {DH};
              if (ih < 0 || ih >= {H}) continue;
              for (int64_t s = 0; s < {KW}; ++s) {{
                const int64_t iw = ow * {SW} - {PW} + s * {DW};
                if (iw < 0 || iw >= {W}) continue;
                acc += {WP}[((k * {CG} + c) * {KH} + r) * {KW} + s] *
                       {XP}[((n * {C} + g0 + c) * {H} + ih) * {W} + iw];
              }}
            }}
          {YP}[((n * {K} + k) * {OH} + oh) * {OW} + ow] = acc;
        }}
)",
        fmt::arg("N", xs[0]), fmt::arg("K", ys[1]), fmt::arg("OH", ys[2]), fmt::arg("OW", ys[3]),
        fmt::arg("G", g), fmt::arg("CG", ws[1]), fmt::arg("BIAS", b ? rd(b) + "[k]" : "0.f"),
        fmt::arg("KH", ws[2]), fmt::arg("KW", ws[3]), fmt::arg("SH", st[0]), fmt::arg("SW", st[1]),
        fmt::arg("PH", pd[0]), fmt::arg("PW", pd[1]), fmt::arg("DH", dl[0]), fmt::arg("DW", dl[1]),
        fmt::arg("H", xs[2]), fmt::arg("W", xs[3]), fmt::arg("C", xs[1]), fmt::arg("WP", rd(w)),
        fmt::arg("XP", rd(x)), fmt::arg("YP", wr(y)));
    return true;
  }

  /// numpy matmul of operands of rank >= 2 (batch dims broadcast); 1-D operands are not taken.
  bool matmul(const Node& n) {
    const Value *a = n.input(0), *b = n.input(1), *y = n.outputs[0];
    const Shape as = shape(a), bs = shape(b), ys = shape(y);
    if (as.size() < 2 || bs.size() < 2 || ys.size() < 2) return false;
    const Shape batch(ys.begin(), ys.end() - 2);
    const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const auto sa = broadcast_strides(ab, batch), sb = broadcast_strides(bb, batch);
    if (!sa || !sb) return false;
    const int64_t m = as[as.size() - 2], k = as.back(), nn = bs.back();
    if (bs[bs.size() - 2] != k || ys[ys.size() - 2] != m || ys.back() != nn) return false;
    define(y);
    // Batch index -> operand offsets, through the broadcast strides (in matrices).
    std::string aoff = "0", boff = "0";
    int64_t rest = shape_numel(batch);
    for (size_t d = 0; d < batch.size(); ++d) {
      rest /= batch[d];
      const std::string idx = fmt::format("(bt / {} % {})", rest, batch[d]);
      aoff += fmt::format(" + {} * {}", idx, (*sa)[d] * m * k);
      boff += fmt::format(" + {} * {}", idx, (*sb)[d] * k * nn);
    }
    code_ += fmt::format(R"(  for (int64_t bt = 0; bt < {B}; ++bt) {{
    const float* ap = {A} + {AOFF};
    const float* bp = {BP} + {BOFF};
    float* yp = {Y} + bt * {M} * {N};
    for (int64_t i = 0; i < {M}; ++i) {{
      float* row = yp + i * {N};
      for (int64_t j = 0; j < {N}; ++j) row[j] = 0.f;
      for (int64_t p = 0; p < {K}; ++p) {{
        const float av = ap[i * {K} + p];
        for (int64_t j = 0; j < {N}; ++j) row[j] += av * bp[p * {N} + j];
      }}
    }}
  }}
)",
                         fmt::arg("B", shape_numel(batch)), fmt::arg("A", rd(a)),
                         fmt::arg("AOFF", aoff), fmt::arg("BP", rd(b)), fmt::arg("BOFF", boff),
                         fmt::arg("Y", wr(y)), fmt::arg("M", m), fmt::arg("N", nn),
                         fmt::arg("K", k));
    return true;
  }

  /// ReduceMax / ReduceMin over constant axes: the output starts at -inf / +inf (the int64
  /// extremes) and every input element folds into its output element, a NaN propagating as in
  /// the reference executor.
  bool reduce_extremum(const Node& n) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape xs = shape(x);
    std::vector<int64_t> axes;
    if (n.inputs.size() > 1 && n.input(1)) {
      const auto a = known_ints(n.input(1));
      if (!a) return false;
      axes = *a;
    }
    std::vector<bool> mask(xs.size(), axes.empty() && !n.attrs.get_int("noop_with_empty_axes", 0));
    for (int64_t a : axes) {
      const int64_t d = norm_axis(a, xs.size());
      if (d < 0 || d >= static_cast<int64_t>(xs.size())) return false;
      mask[static_cast<size_t>(d)] = true;
    }
    // y's strides over x's dims: 0 along the reduced ones.
    std::vector<int64_t> yst(xs.size(), 0);
    int64_t step = 1;
    for (size_t d = xs.size(); d-- > 0;) {
      if (mask[d]) continue;
      yst[d] = step;
      step *= xs[d];
    }
    const bool is_max = n.op == "ReduceMax";
    const std::string init = is_int64(y) ? fmt::format("std::numeric_limits<int64_t>::{}()",
                                                       is_max ? "lowest" : "max")
                                         : (is_max ? "-INFINITY" : "INFINITY");
    const std::string fold = fmt::format("{{0}} = {{1}} {} {{0}} || {{1}} != {{1}} ? {{1}} : {{0}}",
                                         is_max ? ">" : "<");
    define(y);
    const Shape ys = shape(y);
    // Reduced dims that are the innermost ones (a row per output element): the row folds into 8
    // accumulators, which vectorises (the fold's result does not depend on the order, but for
    // the sign of a zero extremum).
    const auto first = std::find(mask.begin(), mask.end(), true);
    if (first != mask.end() && std::all_of(first, mask.end(), [](bool b) { return b; })) {
      const auto row = static_cast<size_t>(first - mask.begin());
      const auto [outer, r0, r1] = around(xs, row);
      const int64_t len = r0 * r1;
      const auto f = [&](const char* a, const char* v) {
        return fmt::format(fmt::runtime(fold), a, v);
      };
      code_ += fmt::format(R"(  for (int64_t o = 0; o < {O}; ++o) {{
    const auto* xp = {X} + o * {R};
    {T} acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = {INIT};
    int64_t r = 0;
    for (; r + 8 <= {R}; r += 8)
      for (int j = 0; j < 8; ++j) {{
        const {T} v = xp[r + j];
        {F_LANE};
      }}
    for (; r < {R}; ++r) {{
      const {T} v = xp[r];
      {F_TAIL};
    }}
    for (int j = 1; j < 8; ++j) {{
      const {T} v = acc[j];
      {F_TAIL};
    }}
    {Y}[o] = acc[0];
  }}
)",
                           fmt::arg("O", outer), fmt::arg("R", len), fmt::arg("X", rd(x)),
                           fmt::arg("Y", wr(y)), fmt::arg("T", ctype(y)), fmt::arg("INIT", init),
                           fmt::arg("F_LANE", f("acc[j]", "v")), fmt::arg("F_TAIL", f("acc[0]", "v")));
      return true;
    }
    code_ += emit_loop_nest(ys, {}, {{wr(y), 0, dense_strides(ys)}}, "", {init}, "0",
                            std::to_string(loop_items(ys)), unroll_);
    code_ += emit_loop_nest(
        xs, {{rd(x), 0, dense_strides(xs)}, {rd(y), 0, yst}}, {{wr(y), 0, yst}},
        fmt::format("        const auto y = x0 {} x1 || x0 != x0 ? x0 : x1;\n", is_max ? ">" : "<"),
        {"y"}, "0", std::to_string(loop_items(xs)), unroll_);
    return true;
  }

  /// ArgMax / ArgMin along one axis: the first extremum (the last with select_last_index), the
  /// comparisons being the reference executor's.
  bool arg_extremum(const Node& n) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape xs = shape(x);
    if (xs.empty() || !is_int64(y)) return false;
    const int64_t axis = norm_axis(n.attrs.get_int("axis", 0), xs.size());
    if (axis < 0 || axis >= static_cast<int64_t>(xs.size()) || xs[static_cast<size_t>(axis)] == 0)
      return false;
    const auto [outer, len, inner] = around(xs, static_cast<size_t>(axis));
    define(y);
    code_ += fmt::format(R"(  for (int64_t o = 0; o < {O}; ++o)
    for (int64_t i = 0; i < {I}; ++i) {{
      const auto* row = {X} + o * {L} * {I} + i;
      int64_t best = 0;
      for (int64_t k = 1; k < {L}; ++k) {{
        const auto v = row[k * {I}], b = row[best * {I}];
        if ({BETTER} || ({LAST} && !(v < b) && !(b < v))) best = k;
      }}
      {Y}[o * {I} + i] = best;
    }}
)",
                         fmt::arg("O", outer), fmt::arg("I", inner), fmt::arg("L", len),
                         fmt::arg("X", rd(x)), fmt::arg("Y", wr(y)),
                         fmt::arg("BETTER", n.op == "ArgMax" ? "b < v" : "v < b"),
                         fmt::arg("LAST", n.attrs.get_int("select_last_index", 0) ? "true" : "false"));
    return true;
  }

  /// TopK with a constant K: the reference executor's order (NaN largest, then values, ties to
  /// the lower index), always sorted, by a partial sort of the indices of each row.
  bool topk(const Node& n) {
    const Value *x = n.input(0), *vals = n.outputs[0], *idx = n.outputs[1];
    const auto k = known_ints(n.input(1));
    const Shape xs = shape(x);
    const int64_t axis = norm_axis(n.attrs.get_int("axis", -1), xs.size());
    if (!k || k->size() != 1 || !is_int64(idx) || axis < 0 ||
        axis >= static_cast<int64_t>(xs.size())) {
      return false;
    }
    const auto [outer, dim, inner] = around(xs, static_cast<size_t>(axis));
    if ((*k)[0] < 0 || (*k)[0] > dim) return false;
    const bool largest = n.attrs.get_int("largest", 1) != 0;
    define(vals);
    define(idx);
    code_ += fmt::format(R"(  {{
    static thread_local float* ord{ID} = nullptr;
    static thread_local long ord{ID}_n = 0;
    int64_t* ord = reinterpret_cast<int64_t*>(yc_scratch<{D2}>(ord{ID}, ord{ID}_n));
    for (int64_t o = 0; o < {O}; ++o)
      for (int64_t i = 0; i < {I}; ++i) {{
        const auto* xp = {X} + o * {D} * {I} + i;
        const auto before = [xp](int64_t a, int64_t b) {{
          const auto va = xp[a * {I}], vb = xp[b * {I}];
          const bool na = va != va, nb = vb != vb;
          if (na != nb) return {LARGEST} ? na : nb;
          if (!na && va != vb) return {LARGEST} ? va > vb : va < vb;
          return a < b;
        }};
        for (int64_t j = 0; j < {D}; ++j) ord[j] = j;
        std::partial_sort(ord, ord + {K}, ord + {D}, before);
        for (int64_t j = 0; j < {K}; ++j) {{
          {V}[o * {K} * {I} + j * {I} + i] = xp[ord[j] * {I}];
          {IX}[o * {K} * {I} + j * {I} + i] = ord[j];
        }}
      }}
  }}
)",
                         fmt::arg("ID", vals->id), fmt::arg("D2", std::max<int64_t>(2 * dim, 2)),
                         fmt::arg("O", outer), fmt::arg("I", inner), fmt::arg("D", dim),
                         fmt::arg("K", (*k)[0]), fmt::arg("X", rd(x)), fmt::arg("V", wr(vals)),
                         fmt::arg("IX", wr(idx)), fmt::arg("LARGEST", largest ? "true" : "false"));
    return true;
  }

  /// Gather along an axis: whole inner rows copied from the indexed positions.
  bool gather(const Node& n) {
    const Value *x = n.input(0), *ix = n.input(1), *y = n.outputs[0];
    const Shape xs = shape(x);
    if (!is_int64(ix) || xs.empty()) return false;
    const int64_t axis = norm_axis(n.attrs.get_int("axis", 0), xs.size());
    if (axis < 0 || axis >= static_cast<int64_t>(xs.size())) return false;
    const auto [outer, dim, inner] = around(xs, static_cast<size_t>(axis));
    const int64_t count = shape_numel(shape(ix));
    if (dim == 0 && count > 0) return false;
    define(y);
    code_ += fmt::format(R"(  for (int64_t o = 0; o < {O}; ++o)
    for (int64_t p = 0; p < {P}; ++p) {{
      const auto* src = {X} + (o * {D} + yc_index({IX}[p], {D})) * {I};
      auto* dst = {Y} + (o * {P} + p) * {I};
      for (int64_t i = 0; i < {I}; ++i) dst[i] = src[i];
    }}
)",
                         fmt::arg("O", outer), fmt::arg("P", count), fmt::arg("D", dim),
                         fmt::arg("I", inner), fmt::arg("X", rd(x)), fmt::arg("IX", rd(ix)),
                         fmt::arg("Y", wr(y)));
    return true;
  }

  /// GatherElements: each output element's position in data is its own but along the axis,
  /// where its index says.
  bool gather_elements(const Node& n) {
    const Value *x = n.input(0), *ix = n.input(1), *y = n.outputs[0];
    const Shape xs = shape(x), is = shape(ix);
    if (!is_int64(ix) || xs.empty() || is.size() != xs.size()) return false;
    const int64_t axis = norm_axis(n.attrs.get_int("axis", 0), xs.size());
    if (axis < 0 || axis >= static_cast<int64_t>(xs.size())) return false;
    const auto a = static_cast<size_t>(axis);
    for (size_t d = 0; d < xs.size(); ++d) {
      if (d != a && is[d] > xs[d]) return false;
    }
    if (xs[a] == 0 && shape_numel(is) > 0) return false;
    const std::vector<int64_t> xst = dense_strides(xs);
    std::string offset;
    for (size_t d = xs.size(); d-- > 0;) {
      offset += d == a ? fmt::format("      rest /= {};\n", is[d])
                       : fmt::format("      off += rest % {} * {};\n      rest /= {};\n", is[d],
                                     xst[d], is[d]);
    }
    define(y);
    code_ += fmt::format(R"(  for (int64_t f = 0; f < {N}; ++f) {{
    int64_t rest = f, off = yc_index({IX}[f], {D}) * {S};
{OFF}    {Y}[f] = {X}[off];
  }}
)",
                         fmt::arg("N", shape_numel(is)), fmt::arg("IX", rd(ix)),
                         fmt::arg("D", xs[a]), fmt::arg("S", xst[a]), fmt::arg("OFF", offset),
                         fmt::arg("Y", wr(y)), fmt::arg("X", rd(x)));
    return true;
  }

  /// Tile with constant repeats: a copy over (repeat, dim) pairs of loops.
  bool tile(const Node& n) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape xs = shape(x), ys = shape(y);
    const auto reps = known_ints(n.input(1));
    if (!reps || reps->size() != xs.size() || ys.size() != xs.size()) return false;
    const std::vector<int64_t> xst = dense_strides(xs), yst = dense_strides(ys);
    Shape dims;
    std::vector<int64_t> from, to;
    for (size_t d = 0; d < xs.size(); ++d) {
      dims.insert(dims.end(), {(*reps)[d], xs[d]});
      from.insert(from.end(), {0, xst[d]});
      to.insert(to.end(), {xs[d] * yst[d], yst[d]});
    }
    define(y);
    if (shape_numel(ys) > 0) copy(dims, {rd(x), 0, from}, {wr(y), 0, to});
    return true;
  }

  /// The extents before, at and after an axis.
  static std::tuple<int64_t, int64_t, int64_t> around(const Shape& s, size_t axis) {
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= s[i];
    for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
    return {outer, s[axis], inner};
  }

  const TailTask& t_;
  int64_t unroll_;
  std::string code_;
  std::set<const Value*> bound_;  ///< values with a pointer in the code so far
  /// Outputs stored in NCHWc, with their output index.
  std::vector<std::pair<const Value*, size_t>> blocked_outputs_;
};

}  // namespace

std::optional<std::string> tail_kernel_body(const TailTask& t, int64_t unroll) {
  return Emitter(t, unroll).run();
}

}  // namespace yoloc::codegen::cpu
