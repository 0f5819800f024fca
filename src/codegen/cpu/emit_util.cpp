#include "codegen/cpu/emit_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "passes/rewrite_util.h"

namespace yoloc::codegen::cpu {

const char* const kInt64Helpers = R"(
// int64 arithmetic as the reference executor does it, without C++'s undefined cases: sums and
// products wrap, division truncates (x / 0 = 0 and INT64_MIN / -1 wraps instead of trapping;
// ONNX leaves them undefined), Mod takes the divisor's sign, float -> int64 truncates and
// saturates (NaN -> 0).
YC_IFN yc_i64 yc_iadd(yc_i64 a, yc_i64 b) {
  return static_cast<yc_i64>(static_cast<unsigned long long>(a) +
                             static_cast<unsigned long long>(b));
}
YC_IFN yc_i64 yc_isub(yc_i64 a, yc_i64 b) {
  return static_cast<yc_i64>(static_cast<unsigned long long>(a) -
                             static_cast<unsigned long long>(b));
}
YC_IFN yc_i64 yc_imul(yc_i64 a, yc_i64 b) {
  return static_cast<yc_i64>(static_cast<unsigned long long>(a) *
                             static_cast<unsigned long long>(b));
}
YC_IFN yc_i64 yc_idiv(yc_i64 a, yc_i64 b) { return b == 0 ? 0 : b == -1 ? yc_isub(0, a) : a / b; }
YC_IFN yc_i64 yc_imod(yc_i64 a, yc_i64 b) {
  if (b == 0 || b == -1) return 0;
  const yc_i64 r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
// An index into a dim of n (n > 0): negative ones count from the end; out-of-range ones, which
// the reference executor rejects, are clamped so that a kernel never reads outside its data.
YC_IFN yc_i64 yc_index(yc_i64 i, yc_i64 n) {
  i = i < 0 ? i + n : i;
  return i < 0 ? 0 : i >= n ? n - 1 : i;
}
YC_IFN yc_i64 yc_f2i64(float x) {
  if (x != x) return 0;
  if (x <= -9223372036854775808.f) return -9223372036854775807LL - 1;
  if (x >= 9223372036854775808.f) return 9223372036854775807LL;
  return static_cast<yc_i64>(x);
}
)";

const std::string kScalarPrelude = std::string(R"(#ifndef YOLOC_CPU_SCALAR_PRELUDE
#define YOLOC_CPU_SCALAR_PRELUDE
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>
// exp in plain float arithmetic (Cephes' polynomial, within 2 ulp of std::exp over the float
// range), so loops calling it vectorise; std::exp is a library call they cannot.
static inline float yc_exp(float x) {
  x = x < -87.3365f ? -87.3365f : (x > 88.7228f ? 88.7228f : x);
  // floor through int conversion: GCC does not vectorise std::floor without -ffast-math.
  const float t = x * 1.44269504088896341f + 0.5f;
  int32_t n = static_cast<int32_t>(t);
  n -= t < static_cast<float>(n) ? 1 : 0;
  const float fx = static_cast<float>(n);
  x = x - fx * 0.693359375f - fx * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * x + 1.3981999507e-3f;
  p = p * x + 8.3334519073e-3f;
  p = p * x + 4.1665795894e-2f;
  p = p * x + 1.6666665459e-1f;
  p = p * x + 5.0000001201e-1f;
  const float y = p * x * x + x + 1.f;
  // 2^n as two normal floats 2^(n/2) * 2^(n - n/2): n runs from -126 to 128.
  union {
    int32_t i;
    float f;
  } s1, s2;
  s1.i = (n / 2 + 127) << 23;
  s2.i = (n - n / 2 + 127) << 23;
  return y * s1.f * s2.f;
}
static inline float yc_sigmoid(float x) { return 1.f / (1.f + yc_exp(-x)); }
static inline float yc_silu(float x) { return x / (1.f + yc_exp(-x)); }
// max that vectorises (std::fmax's NaN rule keeps GCC from using a vector max); like std::fmax
// it skips a NaN `b`, unlike it, it keeps a NaN `a`.
static inline float yc_max(float a, float b) { return b > a ? b : a; }
static inline float yc_relu1(float x) { return x > 0.f ? x : 0.f; }
typedef int64_t yc_i64;
#define YC_IFN static inline
)") + kInt64Helpers + R"(
// IEEE half <-> float for float16 buffers (raw 16-bit storage), branch-light so loops
// vectorise. Half to float is exact: the bits shifted into a float's place, rescaled by 2^112
// (subnormal halves land on float subnormals, which the product normalises exactly).
static inline float yc_h2f(uint16_t h) {
  union {
    uint32_t i;
    float f;
  } u;
  u.i = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const bool special = (h & 0x7c00u) == 0x7c00u;
  u.f *= 0x1p112f;
  u.i |= special ? 0x7f800000u : 0u;
  u.i |= static_cast<uint32_t>(h & 0x8000u) << 16;
  return u.f;
}
// Float to half, round to nearest even; overflow gives inf, NaN stays NaN.
static inline uint16_t yc_f2h(float f) {
  union {
    uint32_t i;
    float f;
  } u, d;
  u.f = f;
  const uint32_t sign = (u.i >> 16) & 0x8000u;
  u.i &= 0x7fffffffu;
  uint32_t o;
  if (u.i >= 0x47800000u) {  // >= 2^16: inf or NaN
    o = u.i > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (u.i < 0x38800000u) {  // below the smallest normal half: the float adder rounds
    d.f = u.f + 0.5f;
    o = d.i - 0x3f000000u;
  } else {  // rebias, round to nearest even (a carry into the exponent is right, up to inf)
    o = (u.i + 0xc8000fffu + ((u.i >> 13) & 1u)) >> 13;
  }
  return static_cast<uint16_t>(o | sign);
}
// A kernel's scratch buffer of at least N floats per thread (contents undefined). The
// pointers are trivially destructible thread-locals and the blocks belong to a library-wide
// registry freed when the library is unloaded: thread-locals with destructors would keep the
// library loaded until every thread that ran it exits.
struct YcScratchBlocks {
  std::mutex mu;
  std::vector<std::unique_ptr<float[]>> blocks;
};
static YcScratchBlocks& yc_scratch_blocks() {
  static YcScratchBlocks b;
  return b;
}
template <long N>
static inline float* yc_scratch(float*& p, long& cap) {
  if (cap < N) {
    YcScratchBlocks& r = yc_scratch_blocks();
    std::lock_guard<std::mutex> lock(r.mu);
    r.blocks.emplace_back(new float[N]);
    p = r.blocks.back().get();
    cap = N;
  }
  return p;
}
#endif
)";

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
}

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  });
}

std::optional<Shape> static_f32_shape(const Value* v) {
  if (!v || v->type.dtype != DType::kFloat32 || !v->type.has_rank || !v->type.is_static()) {
    return std::nullopt;
  }
  return v->type.static_shape();
}

std::optional<Shape> static_float_shape(const Value* v) {
  if (v && v->type.dtype == DType::kFloat16) {
    if (!v->type.has_rank || !v->type.is_static()) return std::nullopt;
    return v->type.static_shape();
  }
  return static_f32_shape(v);
}

bool is_half(const Value* v) { return v && v->type.dtype == DType::kFloat16; }

std::vector<int64_t> dense_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::optional<std::vector<int64_t>> broadcast_strides(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return std::nullopt;
  const std::vector<int64_t> own = dense_strides(in);
  std::vector<int64_t> st(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[lead + i]) {
      st[lead + i] = in[i] == 1 ? 0 : own[i];
    } else if (in[i] != 1) {
      return std::nullopt;
    }
  }
  return st;
}

GroupIO group_io(const Graph& g, const FusedGroup& group) {
  GroupIO io;
  std::set<const Value*> made;
  for (const Node* n : g.nodes()) {
    if (n->group != group.id) continue;
    io.nodes.push_back(n);
    for (const Value* o : n->outputs) made.insert(o);
  }
  std::vector<const Value*> acts, consts;
  std::set<const Value*> seen;
  for (const Node* n : io.nodes) {
    for (const Value* in : n->inputs) {
      if (!in || made.count(in) || !seen.insert(in).second) continue;
      (in->is_constant() ? consts : acts).push_back(in);
    }
  }
  io.inputs = acts;
  io.inputs.insert(io.inputs.end(), consts.begin(), consts.end());
  for (const Node* n : io.nodes) {
    for (const Value* o : n->outputs) {
      bool outside = g.is_output(o);
      for (const Node* u : g.users(o)) outside = outside || u->group != group.id;
      if (outside) io.outputs.push_back(o);
    }
  }
  return io;
}

bool dense_output(const Graph& g, const Value* v) {
  if (v->type.dims.empty() || (v->type.dims[0].known() && v->type.dims[0].value == 1)) return true;
  for (const Node* u : g.users(v)) {
    if (u->op == "Concat" && u->is_view()) return false;
  }
  return true;
}

namespace {

/// The int64 forms of elementwise_expr (every operand and the result int64).
std::optional<std::string> int64_expr(const Node& n, const std::vector<std::string>& a) {
  for (const Value* in : n.inputs) {
    if (!in || in->type.dtype != DType::kInt64) return std::nullopt;
  }
  const std::string& op = n.op;
  if (a.size() == 1) {
    if (op == "Identity") return a[0];
    if (op == "Neg") return fmt::format("yc_isub(0, {})", a[0]);
    if (op == "Abs") return fmt::format("({0} < 0 ? yc_isub(0, {0}) : {0})", a[0]);
    if (op == "Relu") return fmt::format("({0} > 0 ? {0} : int64_t{{0}})", a[0]);
    return std::nullopt;
  }
  if (a.size() != 2) return std::nullopt;
  if (op == "Max") return fmt::format("({0} < {1} ? {1} : {0})", a[0], a[1]);
  if (op == "Min") return fmt::format("({1} < {0} ? {1} : {0})", a[0], a[1]);
  static const std::map<std::string, const char*> kCalls = {
      {"Add", "yc_iadd"}, {"Sub", "yc_isub"}, {"Mul", "yc_imul"},
      {"Div", "yc_idiv"}, {"Mod", "yc_imod"}};
  const auto it = kCalls.find(op);
  if (it == kCalls.end() || (op == "Mod" && n.attrs.get_int("fmod", 0) != 0)) return std::nullopt;
  return fmt::format("{}({}, {})", it->second, a[0], a[1]);
}

}  // namespace

std::optional<std::string> elementwise_expr(const Node& n, const std::vector<std::string>& a) {
  const std::string& op = n.op;
  const auto f = [](float v) { return fmt::format("{:.9g}f", v); };
  const DType out = n.outputs.at(0)->type.dtype;
  if (op != "Cast" && out == DType::kInt64) return int64_expr(n, a);
  if (a.size() == 1 && op != "Cast") {
    if (op == "Relu") return fmt::format("std::fmax({}, 0.f)", a[0]);
    if (op == "Sigmoid") return fmt::format("yc_sigmoid({})", a[0]);
    if (op == "SiLU") return fmt::format("yc_silu({})", a[0]);
    if (op == "Tanh") return fmt::format("std::tanh({})", a[0]);
    if (op == "Exp") return fmt::format("yc_exp({})", a[0]);
    if (op == "Log") return fmt::format("std::log({})", a[0]);
    if (op == "Sqrt") return fmt::format("std::sqrt({})", a[0]);
    if (op == "Abs") return fmt::format("std::fabs({})", a[0]);
    if (op == "Round") return fmt::format("std::nearbyint({})", a[0]);
    if (op == "Neg") return fmt::format("(-{})", a[0]);
    if (op == "Reciprocal") return fmt::format("(1.f / {})", a[0]);
    if (op == "Identity") return a[0];
    if (op == "LeakyRelu") {
      return fmt::format("({0} < 0.f ? {1} * {0} : {0})", a[0],
                         f(n.attrs.get_float("alpha", 0.01f)));
    }
    if (op == "HardSigmoid") {
      return fmt::format("std::fmin(std::fmax({1} * {0} + {2}, 0.f), 1.f)", a[0],
                         f(n.attrs.get_float("alpha", 0.2f)), f(n.attrs.get_float("beta", 0.5f)));
    }
    if (op == "HardSwish") {
      return fmt::format("({0} * std::fmin(std::fmax({0} / 6.f + 0.5f, 0.f), 1.f))", a[0]);
    }
    return std::nullopt;
  }
  if (op == "Cast") {
    // Values are float in the kernel; a float16 result is rounded to what it can hold (a
    // float16 buffer then stores it exactly).
    const DType from = n.input(0) ? n.input(0)->type.dtype : DType::kUndefined;
    const DType to = n.outputs.at(0)->type.dtype;
    const auto is_float_type = [](DType t) { return t == DType::kFloat32 || t == DType::kFloat16; };
    if (a.size() != 1) return std::nullopt;
    if (from == DType::kInt64 && (to == DType::kInt64 || to == DType::kFloat32)) {
      return to == DType::kInt64 ? a[0] : fmt::format("static_cast<float>({})", a[0]);
    }
    if (from == DType::kFloat32 && to == DType::kInt64) return fmt::format("yc_f2i64({})", a[0]);
    if (!is_float_type(from) || !is_float_type(to)) return std::nullopt;
    return to == DType::kFloat16 && from != to ? fmt::format("yc_h2f(yc_f2h({}))", a[0]) : a[0];
  }
  if (op == "Clip") {
    // Omitted bounds do not clip; an empty-name input reaches here as an absent argument.
    std::string e = a[0];
    if (a.size() > 1 && !a[1].empty()) e = fmt::format("std::fmax({}, {})", e, a[1]);
    if (a.size() > 2 && !a[2].empty()) e = fmt::format("std::fmin({}, {})", e, a[2]);
    return e;
  }
  if (a.size() != 2) return std::nullopt;
  if (op == "Add") return fmt::format("({} + {})", a[0], a[1]);
  if (op == "Sub") return fmt::format("({} - {})", a[0], a[1]);
  if (op == "Mul") return fmt::format("({} * {})", a[0], a[1]);
  if (op == "Div") return fmt::format("({} / {})", a[0], a[1]);
  if (op == "Max") return fmt::format("std::fmax({}, {})", a[0], a[1]);
  if (op == "Min") return fmt::format("std::fmin({}, {})", a[0], a[1]);
  if (op == "Pow") return fmt::format("std::pow({}, {})", a[0], a[1]);
  return std::nullopt;
}

int64_t loop_items(const Shape& dims) {
  int64_t n = 1;
  for (size_t i = 0; i + 2 < dims.size(); ++i) n *= dims[i];
  return n;
}

std::string emit_loop_nest(const Shape& dims, const std::vector<LoopOperand>& reads,
                           const std::vector<LoopOperand>& writes, const std::string& body,
                           const std::vector<std::string>& values, const std::string& begin,
                           const std::string& end, int64_t unroll) {
  // Pad to rank 2 so the two inner loops always exist.
  Shape d = dims;
  const size_t pad = d.size() < 2 ? 2 - d.size() : 0;
  d.insert(d.begin(), pad, 1);
  const size_t r = d.size(), lead = r - 2;
  const auto stride = [&](const LoopOperand& o, size_t i) {
    return i < pad ? int64_t{0} : o.strides.at(i - pad);
  };
  std::string s = fmt::format("  for (int64_t it = {}; it < {}; ++it) {{\n    int64_t rest = it;\n",
                              begin, end);
  for (size_t i = lead; i-- > 0;) {
    s += fmt::format("    const int64_t i{0} = rest % {1}; rest /= {1};\n", i, d[i]);
  }
  s += "    (void)rest;\n";
  const auto base = [&](const LoopOperand& o, const std::string& name) {
    std::string e = fmt::format("{}", o.base);
    for (size_t i = 0; i < lead; ++i) {
      if (stride(o, i) != 0) e += fmt::format(" + i{} * {}", i, stride(o, i));
    }
    return fmt::format("    {} = {} + ({});\n", name, o.ptr, e);
  };
  // float16 operands are raw 16-bit storage behind the ABI's float pointers.
  for (size_t k = 0; k < reads.size(); ++k) {
    LoopOperand o = reads[k];
    if (o.half) o.ptr = fmt::format("reinterpret_cast<const uint16_t*>({})", o.ptr);
    s += base(o, fmt::format("const auto* r{}", k));
  }
  for (size_t k = 0; k < writes.size(); ++k) {
    LoopOperand o = writes[k];
    if (o.half) o.ptr = fmt::format("reinterpret_cast<uint16_t*>({})", o.ptr);
    s += base(o, fmt::format("auto* w{}", k));
  }
  s += fmt::format("    for (int64_t j = 0; j < {}; ++j) {{\n#pragma GCC unroll {}\n", d[r - 2],
                   unroll);
  s += fmt::format("      for (int64_t k = 0; k < {}; ++k) {{\n", d[r - 1]);
  const auto at = [&](const LoopOperand& o) {
    return fmt::format("j * {} + k * {}", stride(o, r - 2), stride(o, r - 1));
  };
  for (size_t k = 0; k < reads.size(); ++k) {
    const std::string load = fmt::format("r{}[{}]", k, at(reads[k]));
    s += fmt::format("        const {} x{} = {};\n", reads[k].half ? "float" : "auto", k,
                     reads[k].half ? fmt::format("yc_h2f({})", load) : load);
  }
  s += body;
  for (size_t k = 0; k < writes.size(); ++k) {
    s += fmt::format("        w{}[{}] = {};\n", k, at(writes[k]),
                     writes[k].half ? fmt::format("yc_f2h({})", values.at(k)) : values.at(k));
  }
  s += "      }\n    }\n  }\n";
  return s;
}

}  // namespace yoloc::codegen::cpu
