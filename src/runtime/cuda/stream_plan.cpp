#include "runtime/cuda/stream_plan.h"

#include <algorithm>

#include "core/error.h"

namespace yoloc::runtime::cuda {
namespace {

bool overlap(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a) {
    for (const ByteRange& y : b) {
      if (x.begin < y.end && y.begin < x.end) return true;
    }
  }
  return false;
}

// Whether launch `later` must wait for `earlier`: one writes bytes the other reads or writes.
bool conflict(const LaunchAccess& earlier, const LaunchAccess& later) {
  return overlap(earlier.writes, later.reads) || overlap(earlier.writes, later.writes) ||
         overlap(earlier.reads, later.writes);
}

}  // namespace

StreamPlan plan_streams(const std::vector<LaunchAccess>& launches, int max_streams) {
  YOLOC_CHECK(max_streams >= 1, "plan_streams: max_streams {} < 1", max_streams);
  const auto slots = static_cast<size_t>(max_streams);
  StreamPlan plan;
  plan.steps.resize(launches.size());
  // done[j][s]: the last launch of stream s known finished once launch j has (a vector clock;
  // -1: none); tail[s]: the last launch enqueued on s.
  std::vector<std::vector<int>> done(launches.size(), std::vector<int>(slots, -1));
  std::vector<int> tail(slots, -1);
  for (size_t j = 0; j < launches.size(); ++j) {
    std::vector<int> deps;  // latest first
    for (size_t i = j; i-- > 0;) {
      if (conflict(launches[i], launches[j])) deps.push_back(static_cast<int>(i));
    }
    // The stream: the one whose tail is the latest dependency, else an unused one, else the one
    // idle longest.
    int s = -1;
    for (int d : deps) {
      const int t = plan.steps[static_cast<size_t>(d)].stream;
      if (tail[static_cast<size_t>(t)] == d) {
        s = t;
        break;
      }
    }
    if (s < 0) {
      if (tail[0] < 0) {
        s = 0;
      } else if (plan.streams < max_streams) {
        s = plan.streams++;
      } else {
        s = static_cast<int>(std::min_element(tail.begin(), tail.end()) - tail.begin());
      }
    }
    const auto su = static_cast<size_t>(s);
    std::vector<int> clock(slots, -1);
    if (tail[su] >= 0) clock = done[static_cast<size_t>(tail[su])];
    StreamStep& step = plan.steps[j];
    step.stream = s;
    for (int d : deps) {
      const auto du = static_cast<size_t>(d);
      const auto ds = static_cast<size_t>(plan.steps[du].stream);
      if (clock[ds] >= d) continue;  // implied by the stream's order or an earlier wait
      step.waits.push_back(d);
      plan.steps[du].signals = true;
      for (size_t k = 0; k < slots; ++k) clock[k] = std::max(clock[k], done[du][k]);
    }
    clock[su] = static_cast<int>(j);
    done[j] = std::move(clock);
    tail[su] = static_cast<int>(j);
  }
  return plan;
}

std::optional<std::vector<LaunchAccess>> launch_accesses(const CudaProgram& p) {
  std::vector<LaunchAccess> access(p.launches.size());
  for (size_t j = 0; j < p.launches.size(); ++j) {
    const CudaLaunch& l = p.launches[j];
    if (!l.writes) return std::nullopt;
    for (size_t k = 0; k < l.args.size(); ++k) {
      const Binding& a = l.args[k];
      if (a.buffer != kArena) continue;
      const bool w =
          std::find(l.writes->begin(), l.writes->end(), static_cast<int>(k)) != l.writes->end();
      (w ? access[j].writes : access[j].reads).push_back({a.offset, a.offset + a.bytes});
    }
  }
  return access;
}

}  // namespace yoloc::runtime::cuda
