#pragma once
/// Search strategies: which configs of a task to measure next.
///   random        valid configs drawn uniformly
///   grid          every valid config in index order (small spaces; larger ones are sampled)
///   evolutionary  configs the cost model ranks fastest: bred from the best measured configs
///                 by mutation and crossover over a few generations (or, for spaces small
///                 enough, every valid config ranked), plus a share of random ones so the
///                 model keeps learning beyond its own guesses, one of them a step from the
///                 best measured config along one knob
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tuner/cost_model.h"
#include "tuner/search_space.h"
#include "tuner/task_list.h"

namespace yoloc::tuner {

/// What the search knows of one task.
struct SearchState {
  const TuneTask* task = nullptr;
  std::set<std::string> tried;  ///< ScheduleConfig::str() of configs measured (any outcome)
  std::vector<std::pair<ScheduleConfig, double>> measured;  ///< valid ones, with seconds
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  /// Up to `n` valid configs of the task not yet tried, distinct; fewer (possibly none) when
  /// the space is exhausted.
  virtual std::vector<ScheduleConfig> propose(const SearchState& s, int n) = 0;
};

/// The names `--strategy` takes.
inline const char* const kStrategies[] = {"random", "grid", "evolutionary"};

/// Valid spaces up to this size are ranked whole by the evolutionary search instead of bred.
inline constexpr size_t kRankWholeSpace = 1024;

/// The strategy called `name`; evolutionary uses `model` (trained by the caller, may be
/// untrained: it then draws at random) and ranks spaces of up to `rank_whole` valid configs
/// whole. Raises a UserError for an unknown name.
std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, CostModel* model,
                                              uint64_t seed, size_t rank_whole = kRankWholeSpace);

}  // namespace yoloc::tuner
