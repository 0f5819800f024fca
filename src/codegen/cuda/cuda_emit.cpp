#include "codegen/cuda/cuda_emit.h"

#include <fmt/format.h>

#include "codegen/cpu/emit_util.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {

const char* const kCudaDevicePrelude = R"(#ifndef YOLOC_CUDA_DEVICE_PRELUDE
#define YOLOC_CUDA_DEVICE_PRELUDE
#define YC_DEVICE __device__ __forceinline__
#define YC_KERNEL extern "C" __global__
#define YC_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define YC_LAUNCH_BOUNDS_MIN(n, m) __launch_bounds__(n, m)
#define YC_SYNC() __syncthreads()
// A barrier of `n` threads (whole warps) of the block, numbered id (1 to 15; __syncthreads is 0).
#define YC_BAR_SYNC(id, n) asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory")
// The first statement of every kernel. A kernel launched with programmatic stream serialization
// (sm_90 and later; the runtime sets it, see CudaProgram::pdl) may be launched while the kernel
// before it still runs: it waits here, before it touches memory, until that kernel has finished
// and its writes are visible. The next kernel's launch begins when this one's blocks exit
// (measured on an H200, yolov8n fp16 batch 1: 0.367 -> 0.353 ms; letting it begin at entry with
// griddepcontrol.launch_dependents was slower, 0.402 ms, probably as the waiting blocks hold the
// running kernel's multiprocessor slots; so was launch_dependents after a conv's main loop, 0.400
// ms with the weights' first stages loaded before the wait and 0.378 without, and the weights
// loaded before the wait alone gained nothing, 0.358). Without the attribute, and before sm_90, nothing happens.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define YC_KERNEL_ENTRY() asm volatile("griddepcontrol.wait;\n" ::: "memory")
#else
#define YC_KERNEL_ENTRY() ((void)0)
#endif
// One declaration of the dynamic shared memory for all kernels of a module (a block-scope
// extern __shared__ array names the same object in every kernel, so its type must agree).
#define YC_DYNAMIC_SMEM(T, name)                                       \
  extern __shared__ __align__(1024) unsigned char yc_dynamic_smem[]; \
  T* name = reinterpret_cast<T*>(yc_dynamic_smem)
typedef unsigned short yc_u16;
typedef unsigned int yc_u32;
typedef long long yc_i64;
YC_DEVICE float yc_half_to_float(yc_u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
YC_DEVICE yc_u16 yc_float_to_half(float f) {
  yc_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
YC_DEVICE float yc_bf16_to_float(yc_u16 h) { return __uint_as_float(static_cast<yc_u32>(h) << 16); }
YC_DEVICE yc_u16 yc_float_to_bf16(float f) {
  yc_u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
YC_DEVICE float yc_exp(float x) { return expf(x); }
// exp and x / y to about 2 ulp of float32 (ex2.approx, rcp.approx): for values rounded to 16 bits
// next, where the accurate forms' instructions cost more than their digits are worth.
YC_DEVICE float yc_exp_fast(float x) { return __expf(x); }
YC_DEVICE float yc_div_fast(float x, float y) { return __fdividef(x, y); }
// tanh in one special-function instruction (tanh.approx, sm_75 and later), where exp and a
// division take two; before sm_75 from those.
YC_DEVICE float yc_tanh_fast(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return yc_div_fast(2.f, 1.f + yc_exp_fast(-2.f * x)) - 1.f;
#endif
}
YC_DEVICE yc_u32 yc_smem_address(const void* p) {
  return static_cast<yc_u32>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared, asynchronous; the first src_bytes (0 or 16) are read, the rest zero.
// Cached in L2 only (.cg), or with L1 also in L1 (.ca: for data other threads of the block read
// again soon, as the taps of a kxk window re-read the pixels of their neighbours).
template <int L1 = 0>
YC_DEVICE void yc_cp_async16(void* smem, const void* gmem, int src_bytes) {
  if constexpr (L1) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(yc_smem_address(smem)),
                 "l"(gmem), "r"(src_bytes)
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(yc_smem_address(smem)),
                 "l"(gmem), "r"(src_bytes)
                 : "memory");
  }
}
YC_DEVICE void yc_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N committed groups of this thread are still in flight.
template <int N>
YC_DEVICE void yc_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// Four 8x8 b16 matrices from shared memory; lanes 8i..8i+7 give the row addresses of matrix i.
YC_DEVICE void yc_ldmatrix_x4(yc_u32 (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(yc_smem_address(smem))
               : "memory");
}
// d += a * b for one 16x8x16 tile: a row-major 16x16, b column-major 16x8, fp32 accumulators.
YC_DEVICE void yc_mma_f16(float (&d)[4], const yc_u32 (&a)[4], const yc_u32 (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
YC_DEVICE void yc_mma_bf16(float (&d)[4], const yc_u32 (&a)[4], const yc_u32 (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// Warpgroup MMA (wgmma, sm_90a only: a kernel that uses it defines YC_ARCH_SPECIFIC, so that
// nvrtc_compile builds it for sm_90a, and errors out for other targets). The four warps of a
// warpgroup issue yc_wgmma together: D (64 x N, fp32) += A (64 x 16, a warp's 16 rows in
// registers, mma.m16n8k16's A fragment) * B (16 x N in shared memory, described by `desc`);
// D per warp is N / 8 m16n8 accumulator fragments in order. The MMA runs asynchronously: its
// registers and shared memory must stay untouched until yc_wgmma_wait after its commit group.
// The instruction for one N is emitted by the kernel that uses it (wgmma_source in cuda_emit.h),
// as a specialization of this template; this one, which does nothing, is what other kernels name
// in their discarded branches.
template <int N, int BF16>
YC_DEVICE void yc_wgmma(float (&d)[N / 2], const yc_u32 (&a)[4], unsigned long long desc) {}
// The same with A (64 x 16) from shared memory too, described by `desc_a` (rows 16 w.. of the
// 64 are warp w's rows of D): nothing of A in registers, so nothing for later loads to overwrite.
template <int N, int BF16>
YC_DEVICE void yc_wgmma_ss(float (&d)[N / 2], unsigned long long desc_a,
                           unsigned long long desc_b) {}
// Keeps the compiler from moving accesses of an accumulator across the asynchronous MMA's fence
// and wait (no instruction).
YC_DEVICE void yc_reg_fence(float& r) {
#if defined(__CUDA_ARCH__)
  asm volatile("" : "+f"(r)::"memory");
#endif
}
// (Declared for every target, as kernels name them in discarded branches; the instructions only
// for sm_90a.)
YC_DEVICE void yc_wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
YC_DEVICE void yc_wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
YC_DEVICE void yc_wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// A wgmma shared-memory matrix descriptor without swizzle: core matrices of 8 rows x 16 bytes
// (contiguous), `lbo` bytes apart along the depth (K), `sbo` bytes apart along the rows (M or N).
YC_DEVICE unsigned long long yc_wgmma_desc(const void* smem, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((yc_smem_address(smem) & 0x3ffffu) >> 4) |
         static_cast<unsigned long long>(lbo >> 4) << 16 |
         static_cast<unsigned long long>(sbo >> 4) << 32;
}
// The same for rows of 16 * 2^b bytes (b = 1, 2, 3: 32, 64, 128) whose 16-byte chunks are
// swizzled: the chunk at address bits [4, 4 + b) is XORed with bits [7, 7 + b), so that 8 rows of
// one chunk column fall on distinct banks (the operand 2^(7 + b)-byte aligned; 8 rows `sbo` bytes
// apart; wgmma's K-major swizzle modes 32B, 64B and 128B).
YC_DEVICE unsigned long long yc_wgmma_desc_swizzled(const void* smem, unsigned sbo, int b) {
  return yc_wgmma_desc(smem, 16, sbo) | static_cast<unsigned long long>(4 - b) << 62;
}
// Thread-block clusters (sm_90 and up). YC_CLUSTER_DIMS declares a kernel's cluster shape, so a
// plain launch makes the clusters; a kernel that uses one says #error for older targets itself.
// The helpers compile (to nothing) for those, as kernels name them in discarded branches.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define YC_CLUSTER_DIMS(x, y, z) __cluster_dims__(x, y, z)
#else
#define YC_CLUSTER_DIMS(x, y, z)
#endif
// barrier.cluster over every thread of the cluster: the shared-memory writes of each before it
// are visible to the others' ld.shared::cluster after it.
YC_DEVICE void yc_cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}
// The float at the place of `smem` (this block's shared memory) in the shared memory of the
// cluster's block `rank`.
YC_DEVICE float yc_ld_cluster_f32(const float* smem, unsigned rank) {
  float v = 0.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  yc_u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(yc_smem_address(smem)), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote));
#endif
  return v;
}
#endif  // YOLOC_CUDA_DEVICE_PRELUDE
)";

const char* const kCudaCommonPrelude = R"(#ifndef YOLOC_CUDA_COMMON_PRELUDE
#define YOLOC_CUDA_COMMON_PRELUDE
struct yc_half {
  yc_u16 bits;
};
struct yc_bf16 {
  yc_u16 bits;
};
YC_DEVICE float yc_to_float(float v) { return v; }
YC_DEVICE float yc_to_float(yc_half v) { return yc_half_to_float(v.bits); }
YC_DEVICE float yc_to_float(yc_bf16 v) { return yc_bf16_to_float(v.bits); }
YC_DEVICE float yc_load(const float* p) { return *p; }
YC_DEVICE float yc_load(const yc_half* p) { return yc_half_to_float(p->bits); }
YC_DEVICE float yc_load(const yc_bf16* p) { return yc_bf16_to_float(p->bits); }
YC_DEVICE void yc_store(float* p, float v) { *p = v; }
YC_DEVICE void yc_store(yc_half* p, float v) { p->bits = yc_float_to_half(v); }
YC_DEVICE void yc_store(yc_bf16* p, float v) { p->bits = yc_float_to_bf16(v); }
// Two consecutive elements at a pointer aligned to two elements, in one access.
struct yc_f32x2 {
  float x, y;
};
YC_DEVICE void yc_load2(const float* p, float& a, float& b) {
  const yc_f32x2 v = *reinterpret_cast<const yc_f32x2*>(p);
  a = v.x;
  b = v.y;
}
YC_DEVICE void yc_store2(float* p, float a, float b) {
  *reinterpret_cast<yc_f32x2*>(p) = yc_f32x2{a, b};
}
YC_DEVICE void yc_load2(const yc_half* p, float& a, float& b) {
  const yc_u32 v = *reinterpret_cast<const yc_u32*>(p);
  a = yc_half_to_float(static_cast<yc_u16>(v & 0xffffu));
  b = yc_half_to_float(static_cast<yc_u16>(v >> 16));
}
YC_DEVICE void yc_store2(yc_half* p, float a, float b) {
  *reinterpret_cast<yc_u32*>(p) =
      static_cast<yc_u32>(yc_float_to_half(a)) | (static_cast<yc_u32>(yc_float_to_half(b)) << 16);
}
YC_DEVICE void yc_load2(const yc_bf16* p, float& a, float& b) {
  const yc_u32 v = *reinterpret_cast<const yc_u32*>(p);
  a = yc_bf16_to_float(static_cast<yc_u16>(v & 0xffffu));
  b = yc_bf16_to_float(static_cast<yc_u16>(v >> 16));
}
YC_DEVICE void yc_store2(yc_bf16* p, float a, float b) {
  *reinterpret_cast<yc_u32*>(p) =
      static_cast<yc_u32>(yc_float_to_bf16(a)) | (static_cast<yc_u32>(yc_float_to_bf16(b)) << 16);
}
// T if B, else F (NVRTC compiles without the standard library's <type_traits>).
template <bool B, class T, class F>
struct yc_if {
  typedef T type;
};
template <class T, class F>
struct yc_if<false, T, F> {
  typedef F type;
};
// N elements of T accessed as one unit (N * sizeof(T) bytes: 4, 8 or 16 for one vector access).
template <class T, int N>
struct alignas(sizeof(T) * N) yc_vec {
  T e[N];
};
// The biases of channels n and n + 1 of k (0 for those from k on). A bias is a 16-byte aligned
// constant: for an even n both come in one 8-byte load (the epilogues' channel pairs start
// even, so that is one load instruction instead of two).
YC_DEVICE void yc_bias2(const float* __restrict__ bias, int n, int k, float& b0, float& b1) {
  if ((n & 1) == 0 && n + 1 < k) {
    const yc_vec<float, 2> b = *reinterpret_cast<const yc_vec<float, 2>*>(bias + n);
    b0 = b.e[0];
    b1 = b.e[1];
    return;
  }
  b0 = n < k ? bias[n] : 0.f;
  b1 = n + 1 < k ? bias[n + 1] : 0.f;
}
YC_DEVICE float yc_act_none(float x) { return x; }
YC_DEVICE float yc_act_relu(float x) { return x > 0.f ? x : 0.f; }
YC_DEVICE float yc_act_silu(float x) { return x / (1.f + yc_exp(-x)); }
// SiLU of a value rounded to 16 bits next: x sigmoid(x) = h + h tanh(h), h = x / 2, one
// special-function instruction (yc_tanh_fast) where x / (1 + exp(-x)) takes two (ex2, rcp), at a
// quarter of the FMA rate. yolov8n at batch 128 computes 1.9 G SiLUs, about 0.9 ms of an H200's
// special-function units at two instructions each; with one its fp16 batch-128 network took
// 4.752 ms against 4.926 (bench/results/2026-12-03-h200-silu.json). Error on an H200 over x
// in [-40, 20): at most 9.8e-6 of max(|silu(x)|, 1), well below fp16's rounding (2^-11 = 4.9e-4;
// CudaGpuActivation.FastSiluAndSigmoidAccuracy holds it to that).
YC_DEVICE float yc_act_silu_fast(float x) {
  const float h = 0.5f * x;
  return h + h * yc_tanh_fast(h);
}
YC_DEVICE float yc_act_sigmoid(float x) { return 1.f / (1.f + yc_exp(-x)); }
YC_DEVICE float yc_act_sigmoid_fast(float x) { return yc_div_fast(1.f, 1.f + yc_exp_fast(-x)); }
#endif  // YOLOC_CUDA_COMMON_PRELUDE
)";

std::string wgmma_source(int n, bool bf16) {
  YOLOC_CHECK(n >= 8 && n <= 256 && n % 8 == 0, "wgmma has no N of {}", n);
  const int d = n / 2;
  std::string regs, outs;
  for (int i = 0; i < d; ++i) {
    regs += fmt::format("{}%{}", i ? ", " : "", i);
    outs += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  const char* t = bf16 ? "bf16" : "f16";
  // The two forms: A from registers (immediates scale-a, scale-b, transpose-b) and A from shared
  // memory (scale-a, scale-b, transpose-a, transpose-b); D accumulates (scale-d = 1).
  const auto form = [&](const char* name, const std::string& params, const std::string& a_ops,
                        const std::string& a_ins, int after_a, const char* imm) {
    return fmt::format(
        "template <>\n"
        "YC_DEVICE void {name}<{n}, {b}>(float (&d)[{d}], {params},\n"
        "                                   unsigned long long desc) {{\n"
        "  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{s}, 0;\\n\"\n"
        "               \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{regs}}}, \"\n"
        "               \"{a_ops}, %{dc}, p, {imm};\\n}}\\n\"\n"
        "               : {outs}\n"
        "               : {a_ins}, \"l\"(desc), \"r\"(1)\n"
        "               : \"memory\");\n"
        "}}\n",
        fmt::arg("name", name), fmt::arg("params", params), fmt::arg("a_ops", a_ops),
        fmt::arg("a_ins", a_ins), fmt::arg("imm", imm), fmt::arg("n", n),
        fmt::arg("b", bf16 ? 1 : 0), fmt::arg("d", d), fmt::arg("t", t), fmt::arg("regs", regs),
        fmt::arg("outs", outs), fmt::arg("dc", d + after_a), fmt::arg("s", d + after_a + 1));
  };
  const std::string rs = form("yc_wgmma", "const yc_u32 (&a)[4]",
                              fmt::format("{{%{}, %{}, %{}, %{}}}", d, d + 1, d + 2, d + 3),
                              "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3])", 4, "1, 1, 0");
  const std::string ss = form("yc_wgmma_ss", "unsigned long long desc_a", fmt::format("%{}", d),
                              "\"l\"(desc_a)", 1, "1, 1, 0, 0");
  return fmt::format(
      "#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(YC_WGMMA_{n}_{b})\n"
      "#define YC_WGMMA_{n}_{b}\n{rs}{ss}#endif\n",
      fmt::arg("n", n), fmt::arg("b", bf16 ? 1 : 0), fmt::arg("rs", rs), fmt::arg("ss", ss));
}

std::string cuda_prelude() { return std::string(kCudaDevicePrelude) + kCudaCommonPrelude; }

std::string cuda_storage_type(DType t) {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kFloat16: return "yc_half";
    case DType::kBFloat16: return "yc_bf16";
    default: internal_error("no CUDA storage type for {}", dtype_name(t));
  }
}

const char* cuda_act_function(Activation a, DType out) {
  if (a == Activation::kRelu) return "yc_act_relu";
  if (a != Activation::kSilu) return "yc_act_none";
  return out == DType::kFloat32 ? "yc_act_silu" : "yc_act_silu_fast";
}

std::string conv_common_source(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  // Class scores (a b2b pair's second stage stores them, not its first): the sigmoid, to about 2
  // ulp of float32 where 16-bit values take part (the conv's inputs or its output), as the
  // detect tail takes it.
  const bool scores = task.scores && !task.b2b;
  const bool narrow = task.dtype != DType::kFloat32 || task.out_dtype != DType::kFloat32;
  const char* act = scores ? (narrow ? "yc_act_sigmoid_fast" : "yc_act_sigmoid")
                           : cuda_act_function(t.act, task.out_dtype);
  return fmt::format(
      R"(typedef {in_t} InT;
typedef {out_t} OutT;
// Constants as enumerators: namespace-scope constexpr variables would each become a __device__
// global of the module.
enum : int {{
  N = {n}, C = {c}, H = {h}, W = {w}, K = {k}, OH = {oh}, OW = {ow},
  KH = {kh}, KW = {kw}, SH = {sh}, SW = {sw}, PH = {ph}, PW = {pw}, DH = {dh}, DW = {dw},
  M = N * OH * OW,
  KG = KH * KW * C,
  RES = {res}
}};
enum : yc_i64 {{ IS = {is}, IO = {io}, OS = {os}, OO = {oo}, RS = {rs}, RO = {ro} }};
// The output and the residual: channels innermost (NHWC), or planes of OPLANE elements (NCHW:
// the detect head's convs, whose readers walk the pixels), the map's OH*OW pixels OBASE elements
// into each (OH*OW and 0 but for the class scores a conv stores into the detector's output).
// Only NHWC pairs channels n, n + 1.
enum : yc_i64 {{ OPLANE = {oplane}, OBASE = {obase} }};
enum : int {{
  OUT_NCHW = {out_nchw},
  PAIR_Y = !OUT_NCHW && OS % 2 == 0 && OO % 2 == 0,
  PAIR_R = !OUT_NCHW && RS % 2 == 0 && RO % 2 == 0
}};
// The upsampled copy (UP, NHWC only; CudaConvTask::up): output pixel (img, oh, ow) is also stored
// to the USH x USW pixels (oh * USH + i, ow * USW + j) of `up`, a buffer of US channels whose
// slice starts at channel UO.
enum : int {{ UP = {up}, USH = {ush}, USW = {usw} }};
enum : yc_i64 {{ US = {us}, UO = {uo}, UROW = static_cast<yc_i64>(OW) * USW * US }};
enum : int {{ PAIR_U = UP && US % 2 == 0 && UO % 2 == 0 }};
// Element of channel n of the first copy of pixel m; copy (i, j) lies i * UROW + j * US further.
YC_DEVICE yc_i64 up_at(int m, int n) {{
  const int img = m / (OH * OW), p = m - img * (OH * OW), oh = p / OW, ow = p - oh * OW;
  return ((static_cast<yc_i64>(img) * OH + oh) * USH * (static_cast<yc_i64>(OW) * USW) +
          static_cast<yc_i64>(ow) * USW) * US + UO + n;
}}
YC_DEVICE void up_store(OutT* __restrict__ up, int m, int n, float v) {{
  if constexpr (UP) {{
    const yc_i64 u = up_at(m, n);
#pragma unroll
    for (int i = 0; i < USH; ++i)
#pragma unroll
      for (int j = 0; j < USW; ++j) yc_store(up + (u + i * UROW + j * US), v);
  }}
}}
YC_DEVICE void up_store2(OutT* __restrict__ up, int m, int n, float v0, float v1) {{
  if constexpr (UP) {{
    const yc_i64 u = up_at(m, n);
#pragma unroll
    for (int i = 0; i < USH; ++i)
#pragma unroll
      for (int j = 0; j < USW; ++j) {{
        OutT* p = up + (u + i * UROW + j * US);
        if constexpr (PAIR_U) {{
          yc_store2(p, v0, v1);
        }} else {{
          yc_store(p, v0);
          yc_store(p + 1, v1);
        }}
      }}
  }}
}}
// Element of pixel m, channel n in a buffer of `stride` channels whose slice starts at channel
// `offset`.
YC_DEVICE yc_i64 out_at(int m, int n, yc_i64 stride, yc_i64 offset) {{
  if constexpr (OUT_NCHW) {{
    const int img = m / (OH * OW);
    return (static_cast<yc_i64>(img) * stride + offset + n) * OPLANE + OBASE + (m - img * (OH * OW));
  }} else {{
    return static_cast<yc_i64>(m) * stride + offset + n;
  }}
}}
// The activation (the part of the epilogue after the bias, before the residual and stores).
YC_DEVICE float act(float v) {{ return {act}(v); }}
YC_DEVICE void epilogue(OutT* __restrict__ y, OutT* __restrict__ up, const OutT* __restrict__ res,
                        const float* __restrict__ bias, int m, int n, float v) {{
  if (m >= M || n >= K) return;
  v = {act}(v + bias[n]);
  if constexpr (RES) v += yc_load(res + out_at(m, n, RS, RO));
  yc_store(y + out_at(m, n, OS, OO), v);
  up_store(up, m, n, v);
}}
YC_DEVICE void epilogue2(OutT* __restrict__ y, OutT* __restrict__ up,
                         const OutT* __restrict__ res, const float* __restrict__ bias, int m, int n,
                         float v0, float v1) {{
  if (m >= M || n >= K) return;
  if (n + 1 >= K) {{
    epilogue(y, up, res, bias, m, n, v0);
    return;
  }}
  float b0, b1;
  yc_bias2(bias, n, K, b0, b1);
  v0 = {act}(v0 + b0);
  v1 = {act}(v1 + b1);
  if constexpr (RES) {{
    const yc_i64 r = out_at(m, n, RS, RO);
    if constexpr (PAIR_R) {{
      float a, b;
      yc_load2(res + r, a, b);
      v0 += a;
      v1 += b;
    }} else {{
      v0 += yc_load(res + r);
      v1 += yc_load(res + out_at(m, n + 1, RS, RO));
    }}
  }}
  const yc_i64 o = out_at(m, n, OS, OO);
  if constexpr (PAIR_Y) {{
    yc_store2(y + o, v0, v1);
  }} else {{
    yc_store(y + o, v0);
    yc_store(y + out_at(m, n + 1, OS, OO), v1);
  }}
  up_store2(up, m, n, v0, v1);
}}
// Channels n .. n + NV - 1 of pixel m (n a multiple of NV): 16-byte accesses (fewer bytes for
// short vectors) where the slices keep them aligned, pairs otherwise and for the last channels.
template <int NV>
YC_DEVICE void epilogue_vec(OutT* __restrict__ y, OutT* __restrict__ up,
                            const OutT* __restrict__ res, const float* __restrict__ bias, int m,
                            int n, const float (&v)[NV]) {{
  enum : int {{
    CH = 16 / static_cast<int>(sizeof(OutT)) < NV ? 16 / static_cast<int>(sizeof(OutT)) : NV,
    VEC = !OUT_NCHW && NV % CH == 0 && OS % CH == 0 && OO % CH == 0 && (!RES || (RS % CH == 0 && RO % CH == 0)),
    VEC_U = US % CH == 0 && UO % CH == 0  // the copies in whole vectors too
  }};
  if (!VEC || n % CH != 0 || n + NV > K) {{
#pragma unroll
    for (int e = 0; e + 1 < NV; e += 2) epilogue2(y, up, res, bias, m, n + e, v[e], v[e + 1]);
    if constexpr (NV % 2 != 0) epilogue(y, up, res, bias, m, n + NV - 1, v[NV - 1]);
    return;
  }}
  if (m >= M) return;
  const yc_i64 o = static_cast<yc_i64>(m) * OS + OO + n;
#pragma unroll
  for (int i = 0; i < NV; i += CH) {{
    float a[CH];
    if constexpr (CH % 4 == 0) {{  // n + i is a multiple of CH: whole 16-byte bias vectors
#pragma unroll
      for (int e = 0; e < CH; e += 4) {{
        const yc_vec<float, 4> b = *reinterpret_cast<const yc_vec<float, 4>*>(bias + n + i + e);
#pragma unroll
        for (int q = 0; q < 4; ++q) a[e + q] = {act}(v[i + e + q] + b.e[q]);
      }}
    }} else {{
#pragma unroll
      for (int e = 0; e < CH; ++e) a[e] = {act}(v[i + e] + bias[n + i + e]);
    }}
    if constexpr (RES) {{
      const yc_i64 at = static_cast<yc_i64>(m) * RS + RO + n + i;
      const yc_vec<OutT, CH> r = *reinterpret_cast<const yc_vec<OutT, CH>*>(res + at);
#pragma unroll
      for (int e = 0; e < CH; ++e) a[e] += yc_to_float(r.e[e]);
    }}
    yc_vec<OutT, CH> out;
#pragma unroll
    for (int e = 0; e < CH; ++e) yc_store(&out.e[e], a[e]);
    *reinterpret_cast<yc_vec<OutT, CH>*>(y + (o + i)) = out;
    if constexpr (UP) {{
      const yc_i64 u = up_at(m, n + i);
#pragma unroll
      for (int r = 0; r < USH; ++r)
#pragma unroll
        for (int q = 0; q < USW; ++q) {{
          OutT* p = up + (u + r * UROW + q * US);
          if constexpr (VEC_U) {{
            *reinterpret_cast<yc_vec<OutT, CH>*>(p) = out;
          }} else {{
#pragma unroll
            for (int e = 0; e < CH; ++e) p[e] = out.e[e];
          }}
        }}
    }}
  }}
}}
)",
      fmt::arg("in_t", cuda_storage_type(task.dtype)),
      fmt::arg("out_t", cuda_storage_type(task.out_dtype)), fmt::arg("n", t.n), fmt::arg("c", t.c),
      fmt::arg("h", t.h), fmt::arg("w", t.w), fmt::arg("k", t.k), fmt::arg("oh", t.oh),
      fmt::arg("ow", t.ow), fmt::arg("kh", t.kh), fmt::arg("kw", t.kw), fmt::arg("sh", t.sh),
      fmt::arg("sw", t.sw), fmt::arg("ph", t.ph), fmt::arg("pw", t.pw), fmt::arg("dh", t.dh),
      fmt::arg("dw", t.dw), fmt::arg("is", task.in.stride), fmt::arg("io", task.in.offset),
      fmt::arg("os", task.out.stride), fmt::arg("oo", task.out.offset),
      fmt::arg("rs", task.res.stride), fmt::arg("ro", task.res.offset),
      fmt::arg("res", t.residual ? 1 : 0), fmt::arg("out_nchw", task.out_nchw ? 1 : 0),
      fmt::arg("oplane", scores ? task.scores->plane : t.oh * t.ow),
      fmt::arg("obase", scores ? task.scores->base : 0), fmt::arg("act", act),
      fmt::arg("up", task.up ? 1 : 0), fmt::arg("ush", task.up ? task.up->sh : 1),
      fmt::arg("usw", task.up ? task.up->sw : 1), fmt::arg("us", task.up ? task.up->out.stride : 0),
      fmt::arg("uo", task.up ? task.up->out.offset : 0));
}

CudaKernel conv_kernel(const CudaConvTask& t, const std::string& symbol, const std::string& label,
                       const std::string& config, std::string body,
                       std::initializer_list<std::pair<const char*, std::string>> subs) {
  YOLOC_CHECK(cpu::is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  for (const auto& [from, to] : subs) cpu::replace_all(body, from, to);
  cpu::replace_all(body, "@SYM@", symbol);
  CudaKernel k;
  k.symbol = symbol;
  k.source = cuda_prelude() + "// " + t.key() + " | " + label + config + "\nnamespace " + symbol +
             "_ns {\n" + conv_common_source(t) + body;
  return k;
}

}  // namespace yoloc::codegen::cuda
