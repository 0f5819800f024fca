#pragma once
/// Which stream each of a network's kernels runs on, so that independent branches (the heads of
/// a detector, the two branches of each head) overlap inside the one captured CUDA graph. At
/// batch 1 a kernel's launch and ramp-up cost more than its arithmetic, so the kernels that need
/// not wait for each other should not.
///
/// Dependencies come from the arena bytes each launch reads and writes, not from the graph: the
/// memory plan reuses bytes whose values are dead in the sequential order, and a launch moved
/// onto another stream must still wait for every earlier launch whose bytes it overwrites or
/// whose writes it reads (read after write, write after read, write after write).
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/cuda/cuda_program.h"

namespace yoloc::runtime::cuda {

/// A byte range [begin, end) of the arena.
struct ByteRange {
  uint64_t begin = 0, end = 0;
};

/// The arena bytes one launch touches.
struct LaunchAccess {
  std::vector<ByteRange> reads;
  std::vector<ByteRange> writes;
};

/// Where one launch goes.
struct StreamStep {
  int stream = 0;          ///< 0: the stream the network is enqueued on; 1..: auxiliary ones
  std::vector<int> waits;  ///< earlier launches on other streams it waits for (their events)
  bool signals = false;    ///< a later launch of another stream waits for this one
};

struct StreamPlan {
  std::vector<StreamStep> steps;  ///< one per launch, in launch order
  int streams = 1;                ///< streams used (stream 0 included)
};

/// Plans `launches` (in their sequential order) over at most max_streams streams. A launch goes
/// after its latest dependency's stream tail when that is one, else on a new stream while fewer
/// than max_streams are used, else after the stream that has waited longest. Waits already
/// implied by the stream's order and earlier waits (tracked as vector clocks) are left out. The
/// auxiliary streams start after everything enqueued before the network and stream 0 waits for
/// their tails at the end (the executor's fork and join), so that needs no step here.
StreamPlan plan_streams(const std::vector<LaunchAccess>& launches, int max_streams);

/// The arena bytes each launch of `p` reads and writes (by its "writes"); nullopt when a launch
/// does not say what it writes (artifacts of earlier versions).
std::optional<std::vector<LaunchAccess>> launch_accesses(const CudaProgram& p);

}  // namespace yoloc::runtime::cuda
