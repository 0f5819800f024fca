#include "cuda_emulator.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/cpu/host_compiler.h"
#include "core/error.h"

namespace yoloc::codegen::cuda::testing {
namespace {

// The host side of the prelude's device part, and the block runner.
constexpr const char* kHostPrelude = R"HOST(#define YOLOC_CUDA_DEVICE_PRELUDE
#include <math.h>

#include <sys/mman.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>
#define YC_DEVICE inline
// Built with hidden visibility: only the kernels and the runner are exported, so two builds
// loaded in one process (whose kernel namespaces share names) never bind to each other's helpers.
#define YC_KERNEL extern "C" __attribute__((visibility("default")))
#define YC_LAUNCH_BOUNDS(n)
#define YC_LAUNCH_BOUNDS_MIN(n, m)
#define YC_CLUSTER_DIMS(x, y, z)
#define YC_KERNEL_ENTRY() ((void)0)
#define __align__(n) alignas(n)
typedef unsigned short yc_u16;
typedef unsigned int yc_u32;
typedef long long yc_i64;

struct yc_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline yc_dim3 threadIdx, blockIdx, gridDim;

// Every CUDA thread of the running cluster is a fiber (a ucontext with a stack of its own) on the
// calling thread; a barrier's waiters yield to the scheduler (yc_emulate) until the last one
// arrives. yc_progress counts arrivals and finished threads: a whole round of the scheduler
// without progress is a deadlock (a barrier some threads never reach).
struct yc_thread;
struct yc_fiber {
  ucontext_t ctx;
  yc_dim3 tid, bid;
  yc_thread* self = nullptr;
  bool done = false;
};
inline ucontext_t yc_scheduler;
inline yc_fiber* yc_running = nullptr;
inline unsigned long long yc_progress = 0;

struct yc_barrier {
  explicit yc_barrier(unsigned n) : n(n) {}
  void arrive_and_wait() {
    ++yc_progress;
    if (++arrived == n) {
      arrived = 0;
      ++phase;
      return;
    }
    const unsigned long long mine = phase;
    while (phase == mine) swapcontext(&yc_running->ctx, &yc_scheduler);
  }
  unsigned n, arrived = 0;
  unsigned long long phase = 0;
};

// What the lanes of a warp exchange in a collective operation.
struct yc_warp {
  yc_barrier bar{32};
  const void* ptr[32];
  yc_u32 a[32][4];
  yc_u32 b[32][2];
  float c[32][4];
  yc_barrier group{128};  // of the first warp of a warpgroup: its 128 threads (wgmma)
};
struct yc_block {
  yc_block(unsigned threads, size_t bytes)
      : bar(threads), smem(bytes, 0xff), warps(new yc_warp[threads / 32]) {}
  yc_barrier bar;
  std::map<unsigned, yc_barrier> named;  // bar.sync id, n (1 to 15)
  std::vector<unsigned char> smem;  // 0xff bytes: NaN in f32, f16 and bf16
  std::unique_ptr<yc_warp[]> warps;
  // The shared-memory byte ranges [first, second) the block's wgmmas in flight read (B, and A
  // from shared memory).
  std::multiset<std::pair<size_t, size_t>> wg_reads;
};
// The blocks of one thread-block cluster, which run together.
struct yc_cluster {
  explicit yc_cluster(unsigned threads) : bar(threads) {}
  yc_barrier bar;                   // every thread of every block: barrier.cluster
  std::vector<yc_block*> blocks;    // by rank
};
// A thread's asynchronous operations of one kind (cp.async, wgmma) in commit groups: issued ones
// wait in `pending` until a commit closes their group; wait(n) completes the oldest groups until
// at most n are in flight (cp.async.wait_group, wgmma.wait_group).
struct yc_async_groups {
  std::deque<std::vector<std::function<void()>>> groups;  // committed, oldest first
  std::vector<std::function<void()>> pending;              // issued, not yet committed
  void commit() {
    groups.push_back(std::move(pending));
    pending.clear();
  }
  void wait(size_t n) {
    while (groups.size() > n) {
      for (auto& op : groups.front()) op();
      groups.pop_front();
    }
  }
  bool idle() const { return pending.empty() && groups.empty(); }
};
struct yc_thread {
  yc_block* block = nullptr;
  yc_cluster* cluster = nullptr;
  unsigned rank = 0;  // of the block in its cluster
  yc_async_groups copies;  // cp.async
  yc_async_groups wgmmas;  // wgmma.mma_async
  std::multiset<const void*> wg_a;  // the A fragments (16 bytes each) of this thread's wgmmas in flight
};
inline yc_thread* yc_self = nullptr;

struct yc_range {
  const void* p;
  size_t n;
};
inline std::vector<yc_range> yc_globals;
inline std::string yc_error;

inline void yc_fail(const std::string& what) {
  if (yc_error.empty()) {
    yc_error = what + " (block " + std::to_string(blockIdx.x) + "," +
               std::to_string(blockIdx.y) + "," + std::to_string(blockIdx.z) + " thread " +
               std::to_string(threadIdx.x) + ")";
  }
}
inline bool yc_in(const void* p, size_t n, const void* base, size_t size) {
  const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base);
  return a >= b && a + n <= b + size;
}
inline bool yc_in_smem(const void* p, size_t n) {
  return yc_in(p, n, yc_self->block->smem.data(), yc_self->block->smem.size());
}
inline bool yc_in_global(const void* p, size_t n) {
  for (const yc_range& r : yc_globals)
    if (yc_in(p, n, r.p, r.n)) return true;
  return false;
}
inline bool yc_aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

#define YC_SYNC() yc_self->block->bar.arrive_and_wait()
// bar.sync id, n: the block's barrier id, which every use must give the same count.
inline void yc_bar_sync(unsigned id, unsigned n) {
  auto& named = yc_self->block->named;
  auto it = named.try_emplace(id, n).first;
  if (id == 0 || id > 15 || n % 32 != 0 || it->second.n != n) {
    yc_fail("bar.sync " + std::to_string(id) + ", " + std::to_string(n) +
            ": not a named barrier 1-15 of whole warps, or another count than its other uses");
    return;
  }
  it->second.arrive_and_wait();
}
#define YC_BAR_SYNC(id, n) yc_bar_sync(id, n)
#define YC_DYNAMIC_SMEM(T, name) T* name = reinterpret_cast<T*>(yc_self->block->smem.data())

inline float yc_half_to_float(yc_u16 h) {
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}
inline yc_u16 yc_float_to_half(float f) {
  const _Float16 v = static_cast<_Float16>(f);
  yc_u16 h;
  std::memcpy(&h, &v, 2);
  return h;
}
inline float yc_bf16_to_float(yc_u16 h) {
  const yc_u32 u = static_cast<yc_u32>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline yc_u16 yc_float_to_bf16(float f) {
  yc_u32 u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<yc_u16>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<yc_u16>(u >> 16);
}
inline float yc_exp(float x) { return std::exp(x); }
inline float yc_exp_fast(float x) { return std::exp(x); }
inline float yc_div_fast(float x, float y) { return x / y; }
inline float yc_tanh_fast(float x) { return std::tanh(x); }

// The cache level (L1: .ca, else .cg) changes no result.
template <int L1 = 0>
inline void yc_cp_async16(void* smem, const void* gmem, int src_bytes) {
  if (!yc_in_smem(smem, 16) || !yc_aligned(smem, 16)) {
    yc_fail("cp.async: shared address out of range or not 16-byte aligned");
  } else if (src_bytes != 0 && src_bytes != 16) {
    yc_fail("cp.async: src-size other than 0 or 16");
  } else if (src_bytes != 0 && (!yc_aligned(gmem, 16) || !yc_in_global(gmem, 16))) {
    yc_fail("cp.async: global address outside the buffers or not 16-byte aligned");
  } else {
    const size_t at = static_cast<unsigned char*>(smem) - yc_self->block->smem.data();
    for (const auto& [lo, hi] : yc_self->block->wg_reads) {
      if (at < hi && at + 16 > lo) {
        yc_fail("cp.async: writes shared memory that a wgmma in flight reads (wait for it first)");
      }
    }
    yc_self->copies.pending.push_back([smem, gmem, src_bytes] {
      if (src_bytes) std::memcpy(smem, gmem, 16);
      else std::memset(smem, 0, 16);
    });
  }
}
inline void yc_cp_async_commit() { yc_self->copies.commit(); }
template <int N>
inline void yc_cp_async_wait() {
  yc_self->copies.wait(N);
}

inline void yc_cluster_sync() { yc_self->cluster->bar.arrive_and_wait(); }
// mapa + ld.shared::cluster: the same offset in the shared memory of block `rank` of the cluster.
inline float yc_ld_cluster_f32(const float* smem, unsigned rank) {
  const std::vector<yc_block*>& blocks = yc_self->cluster->blocks;
  if (!yc_in_smem(smem, 4) || !yc_aligned(smem, 4) || rank >= blocks.size()) {
    yc_fail("ld.shared::cluster: address out of shared memory, misaligned, or rank " +
            std::to_string(rank) + " not in a cluster of " + std::to_string(blocks.size()));
    return 0.f;
  }
  const size_t at = reinterpret_cast<const unsigned char*>(smem) - yc_self->block->smem.data();
  float v;
  std::memcpy(&v, blocks[rank]->smem.data() + at, 4);
  return v;
}

inline yc_warp& yc_my_warp() { return yc_self->block->warps[threadIdx.x / 32]; }

// ldmatrix .x4: lane 8i + j gives row j of matrix i; lane l receives, of each matrix, row l / 4,
// elements 2 (l % 4) and 2 (l % 4) + 1.
inline void yc_ldmatrix_x4(yc_u32 (&r)[4], const void* smem) {
  yc_warp& w = yc_my_warp();
  const unsigned lane = threadIdx.x % 32;
  // The GPU reads a wgmma's A registers until its wait: loading new fragments into them earlier
  // corrupts it (ptxas does not keep them apart). Here the registers are the fragment array, whose
  // storage a kernel reuses when it loads the next fragments into the same variable.
  for (const void* a : yc_self->wg_a) {
    const auto p = reinterpret_cast<uintptr_t>(r), q = reinterpret_cast<uintptr_t>(a);
    if (p < q + 16 && q < p + 16) {
      yc_fail("ldmatrix: overwrites the A fragment of a wgmma still in flight (wait for it first)");
    }
  }
  if (!yc_in_smem(smem, 16) || !yc_aligned(smem, 16)) {
    yc_fail("ldmatrix: row address out of shared memory or not 16-byte aligned");
    smem = yc_self->block->smem.data();
  }
  w.ptr[lane] = smem;
  w.bar.arrive_and_wait();
  for (int i = 0; i < 4; ++i) {
    const yc_u16* row = static_cast<const yc_u16*>(w.ptr[8 * i + lane / 4]);
    r[i] = row[2 * (lane % 4)] | (static_cast<yc_u32>(row[2 * (lane % 4) + 1]) << 16);
  }
  w.bar.arrive_and_wait();
}

// The 16 x 16 A operand of mma.m16n8k16 from the fragments the warp's 32 lanes hold (a[lane],
// layout below); wgmma's A from registers is the same, one warp's 16 rows.
template <float (*kToFloat)(yc_u16)>
inline void yc_decode_a(const yc_u32 (&a)[32][4], float (&A)[16][16]) {
  const auto lo = [](yc_u32 v) { return kToFloat(static_cast<yc_u16>(v & 0xffffu)); };
  const auto hi = [](yc_u32 v) { return kToFloat(static_cast<yc_u16>(v >> 16)); };
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int h = 0; h < 2; ++h) {
      const int row = g + 8 * h;
      A[row][2 * t] = lo(a[l][h]);
      A[row][2 * t + 1] = hi(a[l][h]);
      A[row][2 * t + 8] = lo(a[l][2 + h]);
      A[row][2 * t + 9] = hi(a[l][2 + h]);
    }
  }
}

// mma.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"), with
// g = lane / 4, t = lane % 4:
//   A: a[0] = (row g, cols 2t, 2t+1), a[1] = (row g+8, ...), a[2] = (row g, cols 2t+8, 2t+9),
//      a[3] = (row g+8, cols 2t+8, 2t+9); the lower half of a register is the lower column.
//   B: b[0] = (rows 2t, 2t+1, col g), b[1] = (rows 2t+8, 2t+9, col g).
//   C/D: c[0], c[1] = (row g, cols 2t, 2t+1), c[2], c[3] = (row g+8, cols 2t, 2t+1).
template <float (*kToFloat)(yc_u16)>
inline void yc_mma_host(float (&d)[4], const yc_u32 (&a)[4], const yc_u32 (&b)[2]) {
  yc_warp& w = yc_my_warp();
  const unsigned lane = threadIdx.x % 32;
  std::memcpy(w.a[lane], a, sizeof(a));
  std::memcpy(w.b[lane], b, sizeof(b));
  std::memcpy(w.c[lane], d, sizeof(d));
  w.bar.arrive_and_wait();
  float A[16][16], B[16][8], C[16][8];
  yc_decode_a<kToFloat>(w.a, A);
  const auto lo = [](yc_u32 v) { return kToFloat(static_cast<yc_u16>(v & 0xffffu)); };
  const auto hi = [](yc_u32 v) { return kToFloat(static_cast<yc_u16>(v >> 16)); };
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int h = 0; h < 2; ++h) {
      const int row = g + 8 * h;
      B[2 * t + 8 * h][g] = lo(w.b[l][h]);
      B[2 * t + 8 * h + 1][g] = hi(w.b[l][h]);
      C[row][2 * t] = w.c[l][2 * h];
      C[row][2 * t + 1] = w.c[l][2 * h + 1];
    }
  }
  const int g = static_cast<int>(lane / 4), t = static_cast<int>(lane % 4);
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
    float s = C[row][col];
    for (int k = 0; k < 16; ++k) s += A[row][k] * B[k][col];
    d[e] = s;
  }
  w.bar.arrive_and_wait();
}
// The shared-memory address of p: its offset in the block's shared memory (as a wgmma
// descriptor holds it).
inline yc_u32 yc_smem_address(const void* p) {
  if (!yc_in_smem(p, 1)) yc_fail("shared-memory address of a pointer outside shared memory");
  return static_cast<yc_u32>(static_cast<const unsigned char*>(p) - yc_self->block->smem.data());
}
inline unsigned long long yc_wgmma_desc(const void* smem, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((yc_smem_address(smem) & 0x3ffffu) >> 4) |
         static_cast<unsigned long long>(lbo >> 4) << 16 |
         static_cast<unsigned long long>(sbo >> 4) << 32;
}
inline unsigned long long yc_wgmma_desc_swizzled(const void* smem, unsigned sbo, int b) {
  if (yc_smem_address(smem) % 16 != 0) yc_fail("wgmma descriptor: address not 16-byte aligned");
  return yc_wgmma_desc(smem, 16, sbo) | static_cast<unsigned long long>(4 - b) << 62;
}
// An element of a wgmma operand in shared memory by its descriptor (PTX ISA, "Matrix Descriptor
// Format" and "Shared Memory Matrix Layout"), row r along M or N, k along the depth, K-major:
// - no swizzle (layout type 0): core matrices of 8 rows of 16 bytes, element (r, k) at the start
//   address + (r / 8) * SBO + (k / 8) * LBO + (r % 8) * 16 + (k % 8) * 2 bytes;
// - swizzled (types 3, 2, 1: rows of 2^b 16-byte chunks, b = 1, 2, 3 for 32, 64, 128 bytes): at
//   address a = start + (r / 8) * SBO + (r % 8) * 2^b * 16 + k * 2, whose chunk bits [4, 4 + b) are
//   XORed with bits [7, 7 + b) (the shared-memory address, here its offset in the block's).
struct yc_wg_operand {
  explicit yc_wg_operand(unsigned long long desc)
      : start((desc & 0x3fffu) << 4),
        lbo(((desc >> 16) & 0x3fffu) << 4),
        sbo(((desc >> 32) & 0x3fffu) << 4),
        b(static_cast<int>(desc >> 62) == 0 ? 0 : 4 - static_cast<int>(desc >> 62)) {}
  size_t start, lbo, sbo;
  int b;  // swizzle: rows of 2^b chunks; 0: none
  // The bytes [first, second) of `rows` rows 16 deep (of whole rows when swizzled: the XOR
  // moves a chunk within its row; the start may be any row of the pattern).
  std::pair<size_t, size_t> bytes(int rows) const {
    if (b == 0) return {start, start + (rows / 8 - 1) * sbo + lbo + 128};
    const size_t row = size_t{16} << b, lo = start / row * row;
    return {lo, lo + (rows / 8 - 1) * sbo + 8 * row};
  }
  size_t address(int r, int k) const {
    if (b == 0) return start + (r / 8) * sbo + (k / 8) * lbo + (r % 8) * 16 + (k % 8) * 2;
    const size_t a = start + (r / 8) * sbo + (r % 8) * (size_t{16} << b) + k * 2;
    return a ^ ((a >> 3) & (((size_t{1} << b) - 1) << 4));
  }
  template <float (*val)(yc_u16)>
  float at(const std::vector<unsigned char>& smem, int r, int k) const {
    const size_t byte = address(r, k);
    yc_u16 bits = 0;
    if (byte + 2 > smem.size()) {
      yc_fail("wgmma: operand outside shared memory");
    } else {
      std::memcpy(&bits, smem.data() + byte, 2);
    }
    return val(bits);
  }
};

// wgmma.mma_async m64nNk16 (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts" of
// wgmma): warp w of the warpgroup computes rows 16w..16w+15 of D as N / 8 of mma.m16n8k16's
// accumulator fragments, n8-tile j in d[4j..4j+3]; B (16 x N) from shared memory by its
// descriptor; A from registers (warp w's rows as mma.m16n8k16's A fragment) or from shared memory
// by its descriptor (64 x 16). Every thread of the warpgroup must issue it. As on the GPU, it
// completes only at the yc_wgmma_wait that covers its commit group: it reads its shared-memory
// operands and adds to d then, so a kernel that reads d before waiting computes a wrong result,
// and a cp.async into those bytes while it is in flight is reported. A from registers is read at
// issue here, but the GPU reads them until the wait: an ldmatrix into the fragment array of a
// wgmma in flight is reported.
template <int N, int BF16>
inline void yc_wgmma_issue(float (&d)[N / 2], const yc_u32 (*a)[4], unsigned long long desc_a,
                           unsigned long long desc_b) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma N");
  yc_warp& w = yc_my_warp();
  const unsigned lane = threadIdx.x % 32;
  // Every thread of the warpgroup issues it (a block of fewer threads deadlocks here).
  yc_self->block->warps[threadIdx.x / 128 * 4].group.arrive_and_wait();
  constexpr auto val = BF16 ? yc_bf16_to_float : yc_half_to_float;
  const int g = static_cast<int>(lane / 4), t = static_cast<int>(lane % 4);
  // This thread's rows of A (g and g + 8 of its warp's 16), from registers now.
  std::vector<float> A;
  if (a != nullptr) {
    std::memcpy(w.a[lane], *a, sizeof(*a));
    w.bar.arrive_and_wait();
    float warp_a[16][16];
    yc_decode_a<val>(w.a, warp_a);
    w.bar.arrive_and_wait();
    A.assign(warp_a[g], warp_a[g] + 16);
    A.insert(A.end(), warp_a[g + 8], warp_a[g + 8] + 16);
  }
  yc_block* block = yc_self->block;
  float* out = d;
  const yc_wg_operand opb(desc_b), opa(desc_a);
  std::vector<std::pair<size_t, size_t>> reads = {opb.bytes(N)};
  if (a == nullptr) reads.push_back(opa.bytes(64));
  for (const auto& r : reads) block->wg_reads.insert(r);
  yc_thread* self = yc_self;
  const void* a_at = a;
  if (a != nullptr) self->wg_a.insert(a_at);
  const int row0 = static_cast<int>(threadIdx.x / 32 % 4) * 16 + g;  // of the 64 rows of A
  yc_self->wgmmas.pending.push_back([=]() mutable {
    for (const auto& r : reads) block->wg_reads.erase(block->wg_reads.find(r));
    if (a_at != nullptr) self->wg_a.erase(self->wg_a.find(a_at));
    const std::vector<unsigned char>& smem = block->smem;
    if (A.empty()) {
      for (int h = 0; h < 2; ++h)
        for (int k = 0; k < 16; ++k) A.push_back(opa.at<val>(smem, row0 + 8 * h, k));
    }
    for (int j = 0; j < N / 8; ++j) {
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2, col = 8 * j + 2 * t + e % 2;  // row g + 8 h
        float s = out[4 * j + e];
        for (int k = 0; k < 16; ++k) s += A[16 * h + k] * opb.at<val>(smem, col, k);
        out[4 * j + e] = s;
      }
    }
  });
}
template <int N, int BF16>
inline void yc_wgmma(float (&d)[N / 2], const yc_u32 (&a)[4], unsigned long long desc) {
  yc_wgmma_issue<N, BF16>(d, &a, 0, desc);
}
template <int N, int BF16>
inline void yc_wgmma_ss(float (&d)[N / 2], unsigned long long desc_a, unsigned long long desc_b) {
  yc_wgmma_issue<N, BF16>(d, nullptr, desc_a, desc_b);
}
inline void yc_reg_fence(float&) {}
inline void yc_wgmma_fence() {}
inline void yc_wgmma_commit() { yc_self->wgmmas.commit(); }
template <int N>
inline void yc_wgmma_wait() {
  yc_self->wgmmas.wait(N);
}

inline void yc_mma_f16(float (&d)[4], const yc_u32 (&a)[4], const yc_u32 (&b)[2]) {
  yc_mma_host<yc_half_to_float>(d, a, b);
}
inline void yc_mma_bf16(float (&d)[4], const yc_u32 (&a)[4], const yc_u32 (&b)[2]) {
  yc_mma_host<yc_bf16_to_float>(d, a, b);
}

// A pointer that converts to any parameter type: the trampolines (yc_call_<kernel>, see
// trampolines()) pass their argument array to kernels of any parameter list.
struct yc_any_ptr {
  void* p;
  template <class T>
  operator T*() const {
    return static_cast<T*>(p);
  }
};
using yc_trampoline = void (*)(void* const*);

// The thread a fiber runs: the kernel, then the check that it left no copy in flight.
inline yc_trampoline yc_kernel = nullptr;
inline void* const* yc_kernel_args = nullptr;
inline void yc_fiber_main() {
  yc_kernel(yc_kernel_args);
  if (!yc_self->copies.idle()) {
    yc_fail("cp.async copies still in flight at the end of the kernel");
  }
  if (!yc_self->wgmmas.idle()) {
    yc_fail("wgmma still in flight at the end of the kernel");
  }
  yc_running->done = true;
  ++yc_progress;
  swapcontext(&yc_running->ctx, &yc_scheduler);  // never resumed
}

// Runs fn over the grid (g[3]), one cluster (cl[3] blocks, rank x fastest) after the other, the
// blocks of a cluster together: every thread a fiber, resumed in turn (forwards and backwards in
// alternate rounds, so a missing barrier between a write and a read shows in either order) until
// all have finished; returns "" or the first error.
extern "C" __attribute__((visibility("default"))) const char* yc_emulate(
    yc_trampoline fn, const unsigned* g, const unsigned* cl, unsigned threads, unsigned smem_bytes,
    void* const* args, const void* const* range_data, const size_t* range_bytes, int ranges) {
  yc_error.clear();
  yc_globals.clear();
  for (int i = 0; i < ranges; ++i) yc_globals.push_back({range_data[i], range_bytes[i]});
  yc_kernel = fn;
  yc_kernel_args = args;
  gridDim = {g[0], g[1], g[2]};
  const unsigned size = cl[0] * cl[1] * cl[2], count = size * threads;
  // One stack per thread of a cluster, with a guard page below it; reused by every cluster.
  constexpr size_t kPage = 4096, kStack = 256 * 1024;
  const size_t span = kStack + kPage;
  void* const stacks = mmap(nullptr, span * count, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stacks == MAP_FAILED) return "emulation: no memory for the fibers' stacks";
  for (unsigned i = 0; i < count; ++i) {
    mprotect(static_cast<char*>(stacks) + i * span, kPage, PROT_NONE);
  }
  std::vector<yc_fiber> fibers(count);
  for (unsigned cz = 0; cz < g[2] && yc_error.empty(); cz += cl[2]) {
    for (unsigned cy = 0; cy < g[1] && yc_error.empty(); cy += cl[1]) {
      for (unsigned cx = 0; cx < g[0] && yc_error.empty(); cx += cl[0]) {
        yc_cluster cluster(count);
        std::vector<std::unique_ptr<yc_block>> blocks;
        for (unsigned r = 0; r < size; ++r) {
          blocks.push_back(std::make_unique<yc_block>(threads, smem_bytes));
          cluster.blocks.push_back(blocks.back().get());
        }
        std::vector<yc_thread> states(count);
        for (unsigned i = 0; i < count; ++i) {
          const unsigned r = i / threads;
          yc_fiber& f = fibers[i];
          f = yc_fiber{};
          f.tid = {i % threads, 0, 0};
          f.bid = {cx + r % cl[0], cy + r / cl[0] % cl[1], cz + r / (cl[0] * cl[1])};
          f.self = &states[i];
          states[i].block = blocks[r].get();
          states[i].cluster = &cluster;
          states[i].rank = r;
          getcontext(&f.ctx);
          f.ctx.uc_stack.ss_sp = static_cast<char*>(stacks) + i * span + kPage;
          f.ctx.uc_stack.ss_size = kStack;
          f.ctx.uc_link = nullptr;
          makecontext(&f.ctx, yc_fiber_main, 0);
        }
        for (unsigned round = 0, live = count; live > 0; ++round) {
          const unsigned long long before = yc_progress;
          live = 0;
          for (unsigned j = 0; j < count; ++j) {
            yc_fiber& f = fibers[round % 2 ? count - 1 - j : j];
            if (f.done) continue;
            threadIdx = f.tid;
            blockIdx = f.bid;
            yc_self = f.self;
            yc_running = &f;
            swapcontext(&yc_scheduler, &f.ctx);
            live += !f.done;
          }
          if (live > 0 && yc_progress == before) {
            // Every thread left waits at a barrier that the others never reach (on a GPU: a
            // hang). The fibers are abandoned where they wait.
            yc_fail("deadlock: " + std::to_string(live) +
                    " threads wait at a barrier that the other threads never reach");
            break;
          }
        }
      }
    }
  }
  munmap(stacks, span * count);
  return yc_error.c_str();
}
)HOST";

// The sequential runner of generic kernels.
constexpr const char* kGenericRunner = R"HOST(
extern "C" __attribute__((visibility("default"))) const char* yc_emulate_sequential(
    yc_trampoline fn, unsigned gx, unsigned threads, void* const* args) {
  yc_error.clear();
  gridDim = {gx, 1, 1};
  for (unsigned bx = 0; bx < gx; ++bx) {
    for (unsigned t = 0; t < threads; ++t) {
      threadIdx = {t, 0, 0};
      blockIdx = {bx, 0, 0};
      fn(args);
    }
  }
  return yc_error.c_str();
}
)HOST";

std::string compile(const std::string& source) {
  cpu::HostCompilerOptions opts;
  opts.flags = {"-O1",
                "-std=c++20",
                "-fPIC",
                "-shared",
                "-pthread",
                "-fno-strict-aliasing",
                "-fvisibility=hidden",
                "-fno-gnu-unique",
                "-Wno-unknown-pragmas"};
  return cpu::compile_shared_object(source, opts).bytes;
}

// One trampoline per kernel of `source`: yc_call_<symbol>(args) calls the kernel with
// args[0..n).
std::string trampolines(const std::string& source, const std::vector<std::string>& symbols) {
  std::string out;
  for (const std::string& sym : symbols) {
    // The parameter count, from the kernel's definition.
    const size_t at = source.find(" " + sym + "(");
    YOLOC_CHECK(at != std::string::npos, "no kernel {} in the source", sym);
    const size_t end = source.find(')', at);
    const size_t params =
        static_cast<size_t>(std::count(source.begin() + static_cast<std::ptrdiff_t>(at),
                                       source.begin() + static_cast<std::ptrdiff_t>(end), ',')) +
        1;
    std::string call;
    for (size_t i = 0; i < params; ++i) {
      call += fmt::format("{}yc_any_ptr{{a[{}]}}", i ? ", " : "", i);
    }
    out += fmt::format(
        "extern \"C\" __attribute__((visibility(\"default\"))) void yc_call_{0}(void* const* a) "
        "{{\n  {0}({1});\n}}\n",
        sym, call);
  }
  return out;
}

std::string build(const std::vector<CudaKernel>& kernels) {
  std::string source = kHostPrelude;
  std::vector<std::string> symbols;
  for (const CudaKernel& k : kernels) {
    source += k.source;
    symbols.push_back(k.symbol);
  }
  return compile(source + trampolines(source, symbols));
}

std::string build_generic(const GenericKernels& kernels) {
  YOLOC_CHECK(kernels.source.find("YC_SYNC();") == std::string::npos,
              "generic kernels with barriers cannot run sequentially");
  const std::string source = std::string(kHostPrelude) + kGenericRunner + kernels.source;
  std::vector<std::string> symbols;
  for (const CudaKernel& k : kernels.launches) {
    YOLOC_CHECK(k.shared_bytes == 0, "generic kernel {} uses shared memory", k.symbol);
    symbols.push_back(k.symbol);
  }
  return compile(source + trampolines(source, symbols));
}

}  // namespace

EmulatedKernels::EmulatedKernels(const std::vector<CudaKernel>& kernels) : lib_(build(kernels)) {}

std::string EmulatedKernels::launch(const CudaKernel& k, Buffer x, Buffer w, const float* bias,
                                    Buffer res, void* y, size_t y_bytes, Buffer up) const {
  return launch(k, {x, w, {bias, 0}, res, {y, y_bytes}, up});
}

std::string EmulatedKernels::launch(const CudaKernel& k, const std::vector<Buffer>& args) const {
  using Emulate = const char* (*)(void*, const unsigned*, const unsigned*, unsigned, unsigned,
                                  void* const*, const void* const*, const size_t*, int);
  const auto emulate = reinterpret_cast<Emulate>(lib_.symbol("yc_emulate"));
  YOLOC_CHECK(k.block[1] == 1 && k.block[2] == 1 && k.block[0] % 32 == 0,
              "emulation of a {}x{}x{} block", k.block[0], k.block[1], k.block[2]);
  for (int d = 0; d < 3; ++d) {
    YOLOC_CHECK(k.cluster[d] >= 1 && k.grid[d] % k.cluster[d] == 0,
                "grid {}x{}x{} is not a multiple of the cluster {}x{}x{}", k.grid[0], k.grid[1],
                k.grid[2], k.cluster[0], k.cluster[1], k.cluster[2]);
  }
  std::vector<void*> ptrs;
  std::vector<const void*> data;
  std::vector<size_t> bytes;
  for (const Buffer& b : args) {
    ptrs.push_back(const_cast<void*>(b.data));
    data.push_back(b.data);
    bytes.push_back(b.bytes);
  }
  // A persistent kernel on a GPU of kPersistentBlocks multiprocessors: each block walks several
  // tiles.
  std::array<unsigned, 3> grid = k.grid;
  if (k.persistent) grid[0] = std::min(grid[0], kPersistentBlocks);
  return emulate(lib_.symbol("yc_call_" + k.symbol), grid.data(), k.cluster.data(), k.block[0],
                 k.shared_bytes, ptrs.data(), data.data(), bytes.data(),
                 static_cast<int>(args.size()));
}

EmulatedGenericKernels::EmulatedGenericKernels(const GenericKernels& kernels)
    : lib_(build_generic(kernels)) {}

std::string EmulatedGenericKernels::launch(const CudaKernel& k,
                                           const std::vector<void*>& args) const {
  using Emulate = const char* (*)(void*, unsigned, unsigned, void* const*);
  const auto emulate = reinterpret_cast<Emulate>(lib_.symbol("yc_emulate_sequential"));
  YOLOC_CHECK(k.grid[1] == 1 && k.grid[2] == 1 && k.block[1] == 1 && k.block[2] == 1,
              "sequential emulation of a {}x{}x{} grid of {}x{}x{} blocks", k.grid[0], k.grid[1],
              k.grid[2], k.block[0], k.block[1], k.block[2]);
  return emulate(lib_.symbol("yc_call_" + k.symbol), k.grid[0], k.block[0], args.data());
}

}  // namespace yoloc::codegen::cuda::testing
