#pragma once
/// Batch lanes: a CUDA program for a batch of `lanes` x N images made of `lanes` copies of the
/// program for batch N, each on its own slice of the images. The copies share no bytes but the
/// graph's inputs and outputs, so the runtime's stream plan (runtime/cuda/stream_plan.h) runs
/// them side by side: one lane's kernels may fill the multiprocessors another's leave idle (a
/// kernel's last wave, a memory-bound kernel beside a tensor-core one).
///
/// Off unless asked (yoloc compile --lanes N): measured on an H200 (yolov8n, fp16 I/O, the
/// shipped records), two graphs of batch 64 at once ran 25,300 images/s, one graph of batch 128
/// 27,200 (two of those at once 27,600). The kernels of batch 64 lose more per image (their
/// smaller grids' last waves, fewer tuning records) than the overlap of two lanes wins.
#include <cstdint>
#include <map>
#include <vector>

#include "codegen/arena_map.h"
#include "codegen/memory_plan.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

/// Where each lane's activations live. Lane k's kernels have an arena of their own (one lane's
/// memory plan, the k-th of `lanes` copies), except for what the caller reads or writes: each
/// graph input, and each allocation holding a graph output, lies once for the whole batch with
/// lane k's images at k x one lane's bytes. The program's inputs and outputs are then dense
/// tensors of lanes x N images, as they are without lanes. With one lane it is the ArenaMap.
class LaneLayout {
 public:
  /// `g` is one lane's graph (batch N), `plan` its memory plan, `arena` the map of both. Raises a
  /// UserError when a graph input or output does not have the batch as its first dimension.
  LaneLayout(const Graph& g, const MemoryPlan& plan, const ArenaMap& arena, int lanes);

  int lanes() const { return lanes_; }
  /// Byte offset of v's first element in lane `lane`.
  uint64_t offset(const Value* v, int lane) const;
  /// Bytes of all the lanes' arenas, the inputs and the outputs (aligned).
  uint64_t bytes() const { return bytes_; }
  /// Where each graph input's first image lies (lane 0's).
  std::vector<uint64_t> input_offsets() const;

 private:
  const Graph& g_;
  const MemoryPlan& plan_;
  const ArenaMap& arena_;
  int lanes_ = 1;
  uint64_t lane_stride_ = 0;         ///< bytes of one lane's arena
  std::vector<uint64_t> inputs_;     ///< each graph input's place (lanes > 1)
  std::map<int, uint64_t> outputs_;  ///< allocation -> its place, for those holding outputs
  uint64_t bytes_ = 0;
};

}  // namespace yoloc::codegen::cuda
