#pragma once
/// Static memory planning: every intermediate value of an optimized graph gets a byte offset in
/// one arena. Values that are alive at the same time never overlap; views share their source's
/// memory (a Concat view's inputs are written into their slice of the concat buffer, Split and
/// Slice views read slices of their input, reshapes re-address their input).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace yoloc {

/// Every arena offset is a multiple of this.
inline constexpr uint64_t kArenaAlignment = 64;

/// One buffer of the arena: a value and every value that aliases it.
struct Allocation {
  std::string value;  ///< the value owning the buffer (the root of its aliases)
  uint64_t offset = 0;
  uint64_t bytes = 0;
  /// Lifetime in node indices, from the first node writing into it to the last node reading it
  /// (the node count for graph outputs). A node of a fused group counts as its whole group: the
  /// kernel reads its inputs and writes its outputs in one run.
  int first = 0;
  int last = 0;
};

/// Where a value's data lives.
enum class Placement {
  kArena,     ///< in an allocation of the arena
  kInput,     ///< in a graph input (or a view of one): the caller's buffer
  kConstant,  ///< in the weights
  kInternal,  ///< never stored: produced and consumed inside one fused kernel, or redirected
              ///< into a later value by the kernel that makes it (Redirect)
};

/// One value's place.
struct ValueSlot {
  Placement placement = Placement::kArena;
  int allocation = -1;     ///< index into MemoryPlan::allocations for kArena
  int input = -1;          ///< index into Graph::inputs of the input it views (kInput)
  /// Byte offset of its first element: in the arena (kArena), in its graph input (kInput).
  uint64_t offset = 0;
  uint64_t bytes = 0;      ///< its own size in its layout
  bool contiguous = true;  ///< false for a strided slice (e.g. a channel slice at batch > 1)
};

struct MemoryPlan {
  uint64_t arena_bytes = 0;
  /// Every node output in a buffer of its own, as an executor without planning allocates.
  uint64_t naive_bytes = 0;
  /// Every allocation in a buffer of its own: views and fusion applied, no reuse over time.
  uint64_t unshared_bytes = 0;
  std::vector<Allocation> allocations;
  std::map<std::string, ValueSlot> values;  ///< by value name; constants are not listed
};

/// Bytes of a value with a static shape in its layout (a blocked layout pads the channels to a
/// multiple of the block); raises a UserError for a shape that is not static.
uint64_t stored_bytes(const Value& v);

/// Kernel groups that one kernel runs: CUDA's back-to-back conv pairs, a conv that also writes
/// the upsampled copy of the Resize reading it. Their nodes share one span of time, from the
/// first node of any of them to the last, so that what the kernel reads stays alive while it
/// writes, and what it writes lives from that kernel on.
struct MergedGroups {
  std::vector<int> groups;
  /// A value produced and consumed only within the groups is never stored (kInternal), as
  /// within one group: a b2b pair's intermediate. False where the kernel writes every value (the
  /// conv's own output beside its upsampled copy).
  bool internal = true;
};

/// A value a kernel writes into a later value instead (CUDA's head convs storing the class scores
/// and perhaps the boxes straight into the detector's output): `from` is never stored
/// (its readers are passed no pointer for it), and `into`'s bytes live from `group`'s kernel on.
struct Redirect {
  const Value* from = nullptr;
  const Value* into = nullptr;
  int group = -1;
};

/// When an allocation may take the bytes of one that died before it.
enum class Reuse {
  /// Dead in the nodes' sequential order: for an executor that runs one kernel after another.
  kSequential,
  /// Also ordered by the data: every node that touches the dead allocation is an ancestor of
  /// every node writing the new one. For kernels on concurrent streams (the CUDA runtime's
  /// stream plan orders launches by the bytes they touch): a reuse then never makes a kernel wait
  /// for one of an independent branch, as the P4 detect head's last convs would hold back the
  /// P5 path of yolov8n at batch 1.
  kOrdered,
};

/// Plans the arena of `g` (after optimize(): views and fused groups are honoured). Allocations
/// are placed largest first, each at the lowest 64-byte aligned offset that does not overlap any
/// placed allocation it may not reuse (`reuse`; always one alive at the same time). Raises a
/// UserError when a value to store has a shape that is not static.
///
/// `merged`: groups that one kernel runs (see MergedGroups); `redirects`: see Redirect.
MemoryPlan plan_memory(const Graph& g, const std::vector<MergedGroups>& merged = {},
                       Reuse reuse = Reuse::kSequential,
                       const std::vector<Redirect>& redirects = {});

/// Checks that no two allocations alive at the same time overlap, that offsets are aligned,
/// that everything lies inside the arena and that every arena value lies inside its allocation;
/// raises an InternalError naming the offenders otherwise.
void verify_memory_plan(const MemoryPlan& plan);

/// The plan as stored in an artifact's manifest.
nlohmann::json memory_plan_to_json(const MemoryPlan& plan);

}  // namespace yoloc
