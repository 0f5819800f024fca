#include "codegen/cpu/conv_template.h"

#include <fmt/format.h>

#include <algorithm>
#include "codegen/cpu/emit_util.h"
#include "core/error.h"

namespace yoloc::codegen::cpu {
namespace {

constexpr int64_t kL1WeightBytes = 32 * 1024;

int64_t in_blocks(const ConvTask& t) { return ceil_div(t.c, kBlock); }
int64_t in_lanes(const ConvTask& t) { return std::min(t.c, kBlock); }
int64_t out_blocks(const ConvTask& t) { return ceil_div(t.k, kBlock); }

// True when a register tile of ocb x owb accumulators, ocb weight vectors and one broadcast
// input fits the ISA's vector registers (each 16-float vector taking 1 zmm, 2 ymm or 4 q).
bool tile_fits(CpuIsa isa, int64_t ocb, int64_t owb) {
  const int64_t per = registers_per_block(isa);
  return (ocb * owb + ocb) * per + 1 <= isa_info(isa).vector_registers;
}

// The vector operations the kernels are written in, per ISA, each set in its own namespace (a
// kernel names it with a using-directive): yc_vec (16 floats = one NCHW16c block), yc_load /
// yc_store (unaligned), yc_set1 (broadcast), yc_zero, yc_fma (a * b + c), yc_add, and the
// epilogue activations yc_none / yc_relu / yc_silu, with exp by Cephes' polynomial (relative
// error ~1e-7 on [-88, 88]).
//
// AVX-512: intrinsics, one zmm register per vector.
constexpr const char* kAvx512Prelude = R"(#ifndef YOLOC_CPU_CONV_AVX512
#define YOLOC_CPU_CONV_AVX512
#include <immintrin.h>
#include <cstdint>
namespace yc_avx512 {
typedef __m512 yc_vec;
static inline __attribute__((always_inline)) __m512 yc_load(const float* p) {
  return _mm512_loadu_ps(p);
}
static inline __attribute__((always_inline)) void yc_store(float* p, __m512 v) {
  _mm512_storeu_ps(p, v);
}
static inline __attribute__((always_inline)) __m512 yc_set1(float x) { return _mm512_set1_ps(x); }
static inline __attribute__((always_inline)) __m512 yc_zero() { return _mm512_setzero_ps(); }
static inline __attribute__((always_inline)) __m512 yc_fma(__m512 a, __m512 b, __m512 c) {
  return _mm512_fmadd_ps(a, b, c);
}
static inline __attribute__((always_inline)) __m512 yc_add(__m512 a, __m512 b) {
  return _mm512_add_ps(a, b);
}
static inline __attribute__((always_inline)) __m512 yc_exp(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-88.3762626647949f)),
                    _mm512_set1_ps(88.3762626647949f));
  const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(x, x), x), _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(y, fx);
}
static inline __attribute__((always_inline)) __m512 yc_silu(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 e = yc_exp(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_mul_ps(x, _mm512_div_ps(one, _mm512_add_ps(one, e)));
}
static inline __attribute__((always_inline)) __m512 yc_relu(__m512 x) {
  return _mm512_max_ps(x, _mm512_setzero_ps());
}
static inline __attribute__((always_inline)) __m512 yc_none(__m512 x) { return x; }
}  // namespace yc_avx512
#endif
)";

// Every other ISA: GCC / Clang vector extensions. A 16-float vector is a struct of 16 / @VF@
// vectors of the register's width (@VF@ floats: 8 for AVX2, 4 for NEON / SSE), each of which
// the compiler keeps in a register (a 64-byte vector type would live in memory where the
// target has no 64-byte registers); built with -ffp-contract=fast, a * b + c becomes an FMA
// where the target has one. The same exp as above: rounding by the 1.5 * 2^23 trick, the power
// of two made in the exponent bits (2^-127 flushes to 0 where AVX-512's scalef gives a
// denormal; exp(-88) is ~0 either way).
constexpr const char* kVectorPrelude = R"(#ifndef YOLOC_CPU_CONV_VECTOR@VF@
#define YOLOC_CPU_CONV_VECTOR@VF@
#include <cstdint>
namespace yc_vector@VF@ {
constexpr int P = 16 / @VF@;
typedef float yc_part __attribute__((vector_size(@VF@ * 4)));
typedef int32_t yc_ipart __attribute__((vector_size(@VF@ * 4)));
struct yc_vec {
  yc_part p[P];
};
static inline __attribute__((always_inline)) yc_part yc_part_set1(float x) {
  return yc_part{@BCAST@};
}
static inline __attribute__((always_inline)) yc_vec yc_load(const float* x) {
  yc_vec v;
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) __builtin_memcpy(&v.p[i], x + i * @VF@, sizeof(yc_part));
  return v;
}
static inline __attribute__((always_inline)) void yc_store(float* x, const yc_vec& v) {
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) __builtin_memcpy(x + i * @VF@, &v.p[i], sizeof(yc_part));
}
static inline __attribute__((always_inline)) yc_vec yc_set1(float x) {
  yc_vec v;
  const yc_part b = yc_part_set1(x);
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) v.p[i] = b;
  return v;
}
static inline __attribute__((always_inline)) yc_vec yc_zero() { return yc_set1(0.f); }
static inline __attribute__((always_inline)) yc_vec yc_fma(const yc_vec& a, const yc_vec& b,
                                                           const yc_vec& c) {
  yc_vec r;
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) r.p[i] = a.p[i] * b.p[i] + c.p[i];
  return r;
}
static inline __attribute__((always_inline)) yc_vec yc_add(const yc_vec& a, const yc_vec& b) {
  yc_vec r;
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) r.p[i] = a.p[i] + b.p[i];
  return r;
}
static inline __attribute__((always_inline)) yc_part yc_exp(yc_part x) {
  const yc_part lo = yc_part_set1(-88.3762626647949f), hi = yc_part_set1(88.3762626647949f);
  x = x > lo ? x : lo;
  x = x < hi ? x : hi;
  const yc_part magic = yc_part_set1(12582912.f);
  const yc_part fx = (x * yc_part_set1(1.44269504088896341f) + magic) - magic;
  x = x - fx * yc_part_set1(0.693359375f);
  x = x - fx * yc_part_set1(-2.12194440e-4f);
  yc_part p = yc_part_set1(1.9875691500e-4f);
  p = p * x + yc_part_set1(1.3981999507e-3f);
  p = p * x + yc_part_set1(8.3334519073e-3f);
  p = p * x + yc_part_set1(4.1665795894e-2f);
  p = p * x + yc_part_set1(1.6666665459e-1f);
  p = p * x + yc_part_set1(5.0000001201e-1f);
  const yc_part y = (p * (x * x) + x) + yc_part_set1(1.f);
  const yc_ipart e = (__builtin_convertvector(fx, yc_ipart) + 127) << 23;
  return y * (yc_part)e;  // a vector cast reinterprets the bits
}
static inline __attribute__((always_inline)) yc_vec yc_silu(const yc_vec& x) {
  const yc_part one = yc_part_set1(1.f);
  yc_vec r;
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) r.p[i] = x.p[i] * (one / (one + yc_exp(-x.p[i])));
  return r;
}
static inline __attribute__((always_inline)) yc_vec yc_relu(const yc_vec& x) {
  const yc_part zero = {};
  yc_vec r;
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) r.p[i] = x.p[i] > zero ? x.p[i] : zero;
  return r;
}
static inline __attribute__((always_inline)) yc_vec yc_none(const yc_vec& x) { return x; }
}  // namespace yc_vector@VF@
#endif
)";

}  // namespace

std::pair<std::string, std::string> vector_prelude(CpuIsa isa) {
  if (isa == CpuIsa::kAvx512) return {kAvx512Prelude, "yc_avx512"};
  const int vf = isa_info(isa).vector_floats;
  std::string bcast = "x";
  for (int i = 1; i < vf; ++i) bcast += ", x";
  std::string s = kVectorPrelude;
  replace_all(s, "@VF@", std::to_string(vf));
  replace_all(s, "@BCAST@", bcast);
  return {s, "yc_vector" + std::to_string(vf)};
}

namespace {

// One kernel; @NAME@ placeholders are replaced by the task's and config's constants. A tile
// accumulates input channel blocks [cb0, cb0 + ICT) over the bias (first cache tile) or the
// partial sums stored in the output (later ones), and applies the epilogue after the last. Tiles
// whose input columns all lie inside the image (kEdge false) skip the bounds checks; the
// right-hand remainder tile (TAIL columns) always checks.
constexpr const char* kConvKernel = R"(
namespace @SYM@_ns {
using namespace @VNS@;
constexpr int64_t CB = @CB@, CI = @CI@, H = @H@, W = @W@, KB = @KB@, OH = @OH@, OW = @OW@;
constexpr int64_t KH = @KH@, KW = @KW@, SH = @SH@, SW = @SW@, PH = @PH@, PW = @PW@;
constexpr int64_t DH = @DH@, DW = @DW@, OCB = @OCB@, OWB = @OWB@, ICT = @ICT@, N = @N@;
// K < 16 output channels: one block of which lanes [0, K) are stored, to plain NCHW.
constexpr int64_t K = @K@;
constexpr bool PLAIN_OUT = K < 16;
constexpr int64_t OUT_N = PLAIN_OUT ? K * OH * OW : KB * OH * OW * 16;
// Input pixel and channel strides: NCHW16c, or plain NCHW when C < 16 (one partial block).
constexpr int64_t XS = CB == 1 && CI < 16 ? 1 : 16, CS = XS == 1 ? H * W : 1;
constexpr int64_t IN_N = XS == 1 ? CI * H * W : CB * H * W * 16;
constexpr int64_t G = KB / OCB, TAIL = OW % OWB == 0 ? 1 : OW % OWB;
constexpr int64_t WG = CB * KH * KW * CI * OCB * 16;

template <int NW, bool kEdge>
static inline __attribute__((always_inline)) void tile(
    const float* __restrict in, const float* __restrict w, const float* __restrict bias,
    const float* __restrict res, float* __restrict out, int64_t g, int64_t oh, int64_t ow0,
    int64_t cb0) {
  yc_vec acc[OCB][NW];
  const float* wg = w + g * WG;
#pragma GCC unroll 16
  for (int o = 0; o < OCB; ++o) {
    const int64_t ob = ((g * OCB + o) * OH + oh) * OW + ow0;
#pragma GCC unroll 32
    for (int j = 0; j < NW; ++j) {
      acc[o][j] = PLAIN_OUT || cb0 == 0 ? yc_load(bias + (g * OCB + o) * 16)
                                        : yc_load(out + (ob + j) * 16);
    }
  }
  const int64_t cb1 = cb0 + ICT < CB ? cb0 + ICT : CB;
  for (int64_t cb = cb0; cb < cb1; ++cb) {
    for (int64_t r = 0; r < KH; ++r) {
      const int64_t ih = oh * SH - PH + r * DH;
      if (ih < 0 || ih >= H) continue;
      const float* row = in + (cb * H + ih) * W * XS;
      for (int64_t s = 0; s < KW; ++s) {
        const float* wp = wg + ((cb * KH + r) * KW + s) * CI * OCB * 16;
        const int64_t iw0 = ow0 * SW - PW + s * DW;
        int jlo = 0, jhi = NW;
        if (kEdge) {
          while (jlo < NW && iw0 + jlo * SW < 0) ++jlo;
          while (jhi > jlo && iw0 + (jhi - 1) * SW >= W) --jhi;
        }
#pragma GCC unroll @UNROLL@
        for (int64_t ci = 0; ci < CI; ++ci) {
          yc_vec wv[OCB];
#pragma GCC unroll 16
          for (int o = 0; o < OCB; ++o) wv[o] = yc_load(wp + (ci * OCB + o) * 16);
#pragma GCC unroll 32
          for (int j = 0; j < NW; ++j) {
            if (kEdge && (j < jlo || j >= jhi)) continue;
            const yc_vec xv = yc_set1(row[(iw0 + j * SW) * XS + ci * CS]);
#pragma GCC unroll 16
            for (int o = 0; o < OCB; ++o) acc[o][j] = yc_fma(wv[o], xv, acc[o][j]);
          }
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int o = 0; o < OCB; ++o) {
    const int64_t ob = ((g * OCB + o) * OH + oh) * OW + ow0;
#pragma GCC unroll 32
    for (int j = 0; j < NW; ++j) {
      yc_vec v = acc[o][j];
      if constexpr (PLAIN_OUT) {  // ICT == CB: this is the last cache tile
        float lanes[16];
        yc_store(lanes, @ACT@(v));
        const int64_t p = oh * OW + ow0 + j;
#pragma GCC unroll 16
        for (int64_t k = 0; k < K; ++k)
          out[k * OH * OW + p] = @RES@ ? lanes[k] + res[k * OH * OW + p] : lanes[k];
        continue;
      }
      if (cb1 == CB) {
        v = @ACT@(v);
        if (@RES@) v = yc_add(v, yc_load(res + (ob + j) * 16));
      }
      yc_store(out + (ob + j) * 16, v);
    }
  }
}
}  // namespace @SYM@_ns

extern "C" void @SYM@(const float* in, const float* w, const float* bias, const float* res,
                      float* out, int64_t begin, int64_t end) {
  using namespace @SYM@_ns;
  for (int64_t it = begin; it < end; ++it) {
    const int64_t n = it / (G * OH), rem = it % (G * OH);
    const int64_t g = @ORDER@ == 0 ? rem / OH : rem % G;
    const int64_t oh = @ORDER@ == 0 ? rem % OH : rem / G;
    const float* xin = in + n * IN_N;
    const float* xres = @RES@ ? res + n * OUT_N : nullptr;
    float* xout = out + n * OUT_N;
    // The cache tile over input channels is outside the column tiles, so its slice of the
    // weights stays in L1 across the row.
    for (int64_t cb0 = 0; cb0 < CB; cb0 += ICT) {
      int64_t ow0 = 0;
      for (; ow0 + OWB <= OW; ow0 += OWB) {
        if (ow0 * SW - PW < 0 || (ow0 + OWB - 1) * SW - PW + (KW - 1) * DW >= W) {
          tile<OWB, true>(xin, w, bias, xres, xout, g, oh, ow0, cb0);
        } else {
          tile<OWB, false>(xin, w, bias, xres, xout, g, oh, ow0, cb0);
        }
      }
      if constexpr (OW % OWB != 0) tile<TAIL, true>(xin, w, bias, xres, xout, g, oh, ow0, cb0);
    }
  }
}
)";

const char* act_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kSilu: return "silu";
  }
  return "none";
}

}  // namespace

std::string ConvTask::key() const {
  return fmt::format("conv2d_nchw16c_f32 n{} c{} h{} w{} k{} {}x{} s{}x{} p{}x{} d{}x{} {}{}{} {}",
                     n, c, h, w, k, kh, kw, sh, sw, ph, pw, dh, dw, act_name(act),
                     residual ? " add" : "", groups == 1 ? "" : fmt::format(" g{}", groups),
                     isa_name(isa));
}

ConvTask ConvTask::make(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t kernel,
                        int64_t stride, int64_t pad, Activation act, bool residual) {
  ConvTask t;
  t.n = n, t.c = c, t.h = h, t.w = w, t.k = k;
  t.kh = t.kw = kernel, t.sh = t.sw = stride, t.ph = t.pw = pad;
  t.oh = (h + 2 * pad - kernel) / stride + 1;
  t.ow = (w + 2 * pad - kernel) / stride + 1;
  t.act = act, t.residual = residual;
  return t;
}

std::optional<ConvTask> conv_task_from_group(const Graph& g, const FusedGroup& group) {
  if (group.kind != GroupKind::kAnchor) return std::nullopt;
  std::vector<const Node*> nodes;
  for (const Node* n : g.nodes()) {
    if (n->group == group.id) nodes.push_back(n);
  }
  if (nodes.empty() || nodes[0]->id != group.anchor || nodes[0]->op != "Conv") return std::nullopt;
  const Node& conv = *nodes[0];
  const Value* x = conv.input(0);
  const Value* w = conv.input(1);
  const Value* y = conv.outputs.at(0);
  const auto static_4d = [](const Value* v) {
    // Activations may be stored narrow (CUDA fp16 / bf16); the CPU target sees float32 only.
    const DType t = v ? v->type.dtype : DType::kUndefined;
    const bool is_float = t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
    if (!is_float || v->type.dims.size() != 4) return false;
    return std::all_of(v->type.dims.begin(), v->type.dims.end(), [](const Dim& d) { return d.known(); });
  };
  if (!static_4d(x) || !static_4d(w) || !static_4d(y)) return std::nullopt;
  const auto dims = [](const Value* v, size_t i) { return v->type.dims[i].value; };
  ConvTask t;
  t.n = dims(x, 0), t.c = dims(x, 1), t.h = dims(x, 2), t.w = dims(x, 3);
  t.k = dims(y, 1), t.oh = dims(y, 2), t.ow = dims(y, 3), t.kh = dims(w, 2), t.kw = dims(w, 3);
  t.groups = conv.attrs.get_int("group", 1);
  if (t.groups < 1 || t.c % t.groups != 0 || dims(w, 1) != t.c / t.groups) return std::nullopt;
  const auto strides = conv.attrs.get_ints("strides", {1, 1});
  const auto dil = conv.attrs.get_ints("dilations", {1, 1});
  const auto pads = conv.attrs.get_ints("pads", {0, 0, 0, 0});
  if (conv.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" || strides.size() != 2 ||
      dil.size() != 2 || pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) {
    return std::nullopt;
  }
  t.sh = strides[0], t.sw = strides[1], t.dh = dil[0], t.dw = dil[1], t.ph = pads[0], t.pw = pads[1];
  // The epilogue: a chain on the conv's output, activation first, then one residual Add.
  const Value* cur = y;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node& e = *nodes[i];
    const bool on_chain = e.input(0) == cur || e.input(1) == cur;
    if (!on_chain || e.outputs.size() != 1) return std::nullopt;
    if ((e.op == "Relu" || e.op == "SiLU") && !t.residual && t.act == Activation::kNone) {
      t.act = e.op == "Relu" ? Activation::kRelu : Activation::kSilu;
    } else if (e.op == "Add" && !t.residual && e.inputs.size() == 2) {
      const Value* other = e.input(0) == cur ? e.input(1) : e.input(0);
      if (!static_4d(other) || other->type.dims != y->type.dims) return std::nullopt;
      t.residual = true;
    } else {
      return std::nullopt;
    }
    cur = e.outputs[0];
  }
  return t;
}

bool ConvTemplate::matches(const ConvTask& t) {
  const bool sizes = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.oh > 0 && t.ow > 0 &&
                     t.kh > 0 && t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 &&
                     t.ph >= 0 && t.pw >= 0;
  return sizes && t.groups == 1 && t.k > 0 && (t.k % kBlock == 0 || t.k < kBlock) &&
         (t.c % kBlock == 0 || t.c < kBlock);
}

ScheduleSpace ConvTemplate::space(const ConvTask& t) {
  ScheduleSpace s;
  s.knobs.push_back({"ocb", "output channel blocks (of 16) per register tile", {1, 2, 3, 4, 5, 6}});
  s.knobs.push_back({"owb", "output columns per register tile", {1, 2, 4, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28}});
  std::vector<int64_t> ict;
  for (int64_t v = 1; v < in_blocks(t); v *= 2) ict.push_back(v);
  ict.push_back(in_blocks(t));
  s.knobs.push_back({"ict", "input channel blocks per cache tile", ict});
  s.knobs.push_back({"order", "0: channel groups outer, rows inner; 1: rows outer", {0, 1}});
  s.knobs.push_back({"unroll", "unroll of the inner input-channel loop", {1, 2, 4, 8, 16}});
  return s;
}

bool ConvTemplate::valid(const ConvTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const int64_t ocb = cfg.get("ocb"), owb = cfg.get("owb");
  // A plain output (K < 16) cannot hold partial sums: one cache tile over all input channels.
  const bool ict_ok = t.k >= kBlock || cfg.get("ict") == in_blocks(t);
  return out_blocks(t) % ocb == 0 && tile_fits(t.isa, ocb, owb) && owb <= t.ow && ict_ok;
}

ScheduleConfig ConvTemplate::default_config(const ConvTask& t) {
  YOLOC_CHECK(matches(t), "conv template does not match {}", t.key());
  const int64_t kb = out_blocks(t);
  // The widest tile that fits the registers and wastes few columns: prefer 2 or 4 channel
  // blocks (weights reused over columns, inputs over channels), then the column count that
  // covers OW with the least remainder.
  const ScheduleSpace sp = space(t);
  const int64_t per = registers_per_block(t.isa);
  ScheduleConfig best;
  double best_score = -1;
  for (int64_t ocb : {4, 2, 5, 3, 1}) {
    if (kb % ocb != 0) continue;
    for (int64_t owb : sp.find("owb")->domain) {
      if (!tile_fits(t.isa, ocb, owb) || owb > t.ow) continue;
      const int64_t tiles = ceil_div(t.ow, owb);
      const double eff = static_cast<double>(t.ow) / static_cast<double>(tiles * owb);
      // FMAs per load of one channel step (in hardware registers: a weight vector is `per`
      // loads, an input one broadcast), damped by remainder waste.
      const double score = eff * static_cast<double>(ocb * owb * per) /
                           static_cast<double>(ocb * per + owb);
      if (score > best_score + 1e-9) {
        best_score = score;
        best = ScheduleConfig({{"ocb", ocb}, {"owb", owb}});
      }
    }
  }
  // Input channel blocks per cache tile: as many as keep the tile's weights within ~32 KiB of
  // L1, so they are reused across the row's column tiles.
  const int64_t per_block = t.kh * t.kw * in_lanes(t) * best.get("ocb") * kBlock * 4;
  int64_t ict = 1;
  for (int64_t v : sp.find("ict")->domain) {
    if (v * per_block <= kL1WeightBytes) ict = v;
  }
  best.set("ict", t.k < kBlock ? in_blocks(t) : ict);
  best.set("order", 0);
  best.set("unroll", in_lanes(t) >= 4 ? 4 : 1);
  YOLOC_CHECK(valid(t, best), "default conv config {} invalid for {}", best.str(), t.key());
  return best;
}

CpuKernel ConvTemplate::emit(const ConvTask& t, const ScheduleConfig& cfg,
                             const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "conv config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  const auto prelude = vector_prelude(t.isa);
  std::string body = kConvKernel;
  const auto num = [](int64_t v) { return std::to_string(v); };
  const std::pair<const char*, std::string> subs[] = {
      {"@SYM@", symbol}, {"@CB@", num(in_blocks(t))}, {"@CI@", num(in_lanes(t))},
      {"@H@", num(t.h)}, {"@W@", num(t.w)}, {"@KB@", num(out_blocks(t))},
      {"@K@", num(t.k)},
      {"@OH@", num(t.oh)}, {"@OW@", num(t.ow)}, {"@KH@", num(t.kh)}, {"@KW@", num(t.kw)},
      {"@SH@", num(t.sh)}, {"@SW@", num(t.sw)}, {"@PH@", num(t.ph)}, {"@PW@", num(t.pw)},
      {"@DH@", num(t.dh)}, {"@DW@", num(t.dw)}, {"@N@", num(t.n)},
      {"@OCB@", num(cfg.get("ocb"))}, {"@OWB@", num(cfg.get("owb"))},
      {"@ICT@", num(cfg.get("ict"))}, {"@ORDER@", num(cfg.get("order"))},
      {"@UNROLL@", num(cfg.get("unroll"))},
      {"@ACT@", std::string("yc_") + act_name(t.act)}, {"@RES@", t.residual ? "true" : "false"},
      {"@VNS@", prelude.second}};
  for (const auto& [from, to] : subs) replace_all(body, from, to);
  CpuKernel k;
  k.symbol = symbol;
  k.source = prelude.first + "// " + t.key() + " | " + cfg.str() + body;
  k.work_items = t.n * (out_blocks(t) / cfg.get("ocb")) * t.oh;
  return k;
}

std::vector<float> ConvTemplate::pack_weights(const ConvTask& t, const ScheduleConfig& cfg,
                                              const float* oihw) {
  const int64_t ocb = cfg.get("ocb"), cb_n = in_blocks(t), ci_n = in_lanes(t);
  const int64_t groups = out_blocks(t) / ocb;
  std::vector<float> out(static_cast<size_t>(groups * cb_n * t.kh * t.kw * ci_n * ocb * kBlock), 0.f);
  size_t i = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t cb = 0; cb < cb_n; ++cb)
      for (int64_t r = 0; r < t.kh; ++r)
        for (int64_t s = 0; s < t.kw; ++s)
          for (int64_t ci = 0; ci < ci_n; ++ci)
            for (int64_t o = 0; o < ocb; ++o)
              for (int64_t lane = 0; lane < kBlock; ++lane, ++i) {
                const int64_t k = (g * ocb + o) * kBlock + lane, c = cb * kBlock + ci;
                if (c < t.c && k < t.k) out[i] = oihw[((k * t.c + c) * t.kh + r) * t.kw + s];
              }
  return out;
}

std::vector<float> to_nchw16c(const float* x, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t cb = ceil_div(c, kBlock);
  std::vector<float> out(static_cast<size_t>(n * cb * h * w * kBlock), 0.f);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < h * w; ++p)
        out[static_cast<size_t>(((b * cb + ch / kBlock) * h * w + p) * kBlock + ch % kBlock)] =
            x[(b * c + ch) * h * w + p];
  return out;
}

std::vector<float> from_nchw16c(const float* x, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t cb = ceil_div(c, kBlock);
  std::vector<float> out(static_cast<size_t>(n * c * h * w));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < h * w; ++p)
        out[static_cast<size_t>((b * c + ch) * h * w + p)] =
            x[((b * cb + ch / kBlock) * h * w + p) * kBlock + ch % kBlock];
  return out;
}

}  // namespace yoloc::codegen::cpu
