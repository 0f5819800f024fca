#ifndef YOLOC_CUDA_DEVICE_PRELUDE
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
