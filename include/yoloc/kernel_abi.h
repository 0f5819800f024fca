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
/// The runtime finds kernels only through the table the library exports under the fixed name
/// YOLOC_KERNEL_TABLE_SYMBOL (never by looking up a name the manifest gives, which could name
/// any symbol of the process, `system` say): one entry per call of the program, in the order
/// the program runs them, each declaring what the call must bind. The runtime refuses a
/// program whose calls differ from the table (count, order, names, work items, argument and
/// parameter counts), a binding shorter than the bytes the kernel touches through it, and a
/// binding the kernel writes through that is not in the arena.
///
/// This header is plain C so that generated sources (C++17, no include path) can copy it verbatim.
#include <stdint.h>

/// Bumped on any change of the convention; the manifest's program records the one it targets.
#define YOLOC_KERNEL_ABI_VERSION 2

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*yoloc_kernel_fn)(void* const* args, const int64_t* params, int64_t begin,
                                int64_t end);

/// What one call of the program binds, as the kernel library declares it.
typedef struct yoloc_kernel_entry {
  const char* name;           ///< the call's symbol in the manifest
  yoloc_kernel_fn fn;         ///< the function to call
  int64_t work_items;         ///< the call's work items
  uint32_t n_args;            ///< the bindings it takes (args[0 .. n_args))
  uint32_t n_params;          ///< the integer parameters it reads
  const uint64_t* arg_bytes;  ///< n_args entries: the bytes it touches through each binding
  const uint8_t* arg_writes;  ///< n_args entries: 1 where it writes through the binding
} yoloc_kernel_entry;

/// The table a CPU kernel library exports as YOLOC_KERNEL_TABLE_SYMBOL.
typedef struct yoloc_kernel_table {
  uint32_t abi;                       ///< YOLOC_KERNEL_ABI_VERSION
  uint32_t count;                     ///< the program's calls
  const yoloc_kernel_entry* entries;  ///< `count` entries, in the order the calls run
} yoloc_kernel_table;

#define YOLOC_KERNEL_TABLE_SYMBOL "yoloc_kernel_table"

#ifdef __cplusplus
}
#endif

#endif  // YOLOC_KERNEL_ABI_H_
