#ifndef YOLOC_KERNEL_ABI_H_
#define YOLOC_KERNEL_ABI_H_
/// The one calling convention between generated CPU kernels (compiler side) and the runtime's
/// executor. Every symbol a CPU artifact's program names is an `extern "C"` function of type
/// yoloc_kernel_fn:
///
///   extern "C" void name(void* const* args, const int64_t* params, int64_t begin, int64_t end);
///
/// - `args`: one pointer per argument binding of the call, in the manifest's order: arena
///   buffers (read-write) and weight blobs (READ-ONLY: they point into the artifact's read-only
///   mapping; writing them faults).
/// - `params`: the call's integer parameters in the manifest's order (nullptr when it has none).
/// - `[begin, end)`: the work items this invocation computes, a sub-range of [0, work_items).
///   The executor splits work_items across its threads, so items must write disjoint bytes.
///
/// A kernel that has a typed signature (e.g. the conv template's
/// `void k(const float* in, const float* w, const float* bias, const float* res, float* out,
/// int64_t begin, int64_t end)`) is exposed through a one-line wrapper that casts `args[i]`:
///
///   extern "C" void k_abi(void* const* a, const int64_t* p, int64_t b, int64_t e) {
///     k((const float*)a[0], (const float*)a[1], (const float*)a[2], (const float*)a[3],
///       (float*)a[4], b, e);
///   }
///
/// This header is plain C so that generated sources (C++17, no include path) can copy it verbatim.
#include <stdint.h>

/// Bumped on any change of the convention; the manifest's program records the one it targets.
#define YOLOC_KERNEL_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*yoloc_kernel_fn)(void* const* args, const int64_t* params, int64_t begin,
                                int64_t end);

#ifdef __cplusplus
}
#endif

#endif  // YOLOC_KERNEL_ABI_H_
