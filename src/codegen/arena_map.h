#pragma once
/// What every target's compiler driver needs to bind kernel arguments to memory: where each
/// activation lives (the memory plan's arena, then the graph inputs), and a check that kernels
/// running in program order read only what earlier kernels wrote.
#include <cstdint>
#include <set>
#include <vector>

#include "codegen/memory_plan.h"
#include "ir/graph.h"

namespace yoloc {

/// v rounded up to a multiple of kArenaAlignment.
uint64_t align_to_arena(uint64_t v);

/// The runtime's activation buffer: the memory plan's arena, then each graph input (64-byte
/// aligned).
class ArenaMap {
 public:
  ArenaMap(const Graph& g, const MemoryPlan& plan);

  /// Bytes of the whole buffer (the plan's arena and the inputs).
  uint64_t bytes() const { return bytes_; }
  const std::vector<uint64_t>& input_offsets() const { return input_offsets_; }

  /// Byte offset of v's first element, the bytes of the buffer it lies in (its root: an
  /// allocation or a graph input), and whether its elements are dense.
  struct Place {
    uint64_t offset = 0;
    uint64_t root_bytes = 0;
    bool contiguous = true;
  };
  /// Raises an InternalError for a value that is not stored (constant or internal to a kernel).
  Place place(const Value* v) const;

 private:
  const Graph& g_;
  const MemoryPlan& plan_;
  std::vector<uint64_t> input_offsets_;
  uint64_t bytes_ = 0;
};

/// Tracks which values hold their data while the program runs in order, so a driver can check
/// that every kernel reads only what earlier kernels wrote (or the graph inputs, or constants).
class Availability {
 public:
  explicit Availability(const Graph& g) : g_(g) {}
  void written(const Value* v) { written_.insert(v); }
  /// True once v holds its data; a view once everything it re-addresses does.
  bool available(const Value* v) const;

 private:
  const Graph& g_;
  std::set<const Value*> written_;
};

}  // namespace yoloc
