#pragma once
/// The tuning loop: rounds of candidates, each round for the task the scheduler picks, proposed
/// by the search strategy, timed by the measurer, appended to the records file and fed to the
/// cost model, until the trial or time budget is spent or every task has stopped; then the
/// best configs are re-measured next to the defaults (see TuneOptions::verify_rounds).
///
/// Resuming: the records of the file measured under the same conditions (hardware, batch,
/// threads) count as tried (never measured again), seed each task's best time and the
/// scheduler, and warm-start the cost model. Each task's first round of a run starts with its
/// default config, whose outputs are the reference the other candidates are checked against.
///
/// Building and measuring overlap (TuneOptions::overlap): while the measurer runs round k, rounds
/// k+1 .. k+D are built, each on a thread of its own, with D the fewest rounds whose candidates
/// fill the measurer's build jobs (ceil(build_jobs / round_size); 1 when the jobs fit in one
/// round). The builds running at once share the build jobs (Measurer::lease_build_jobs, served
/// in the order the rounds are measured), so a host with more cores than a round has
/// candidates compiles several rounds, of different tasks, at once; with 16 NVRTC jobs and
/// rounds of 8, two rounds build at once where one did. Rounds keep round_size candidates
/// (rather than growing to the build jobs once every task had one, which would help only after
/// the first pass and coarsen the scheduler's and early stopping's steps), the first pass
/// included: the scheduler gives every task its first round before any gets a second, and the
/// rounds are measured in the order they were planned, so no task waits for its first round
/// behind another's second. The search proposes each round up to D rounds before the results
/// before it are in (the scheduler and the best times see every result that has arrived, the
/// cost model all but the last round's: the next round starts building before it retrains). The
/// rounds under way of a task that stops meanwhile (early stopping, a failed reference) are dropped
/// unmeasured (their builds are waited for); no round is planned once the trial or time budget is
/// spent (the rounds under way count against the trial budget; those under way at the end of a time
/// budget are measured, at most D + 1 rounds past it), and the run ends with no build or request
/// left.
#include <string>
#include <vector>

#include "tuner/measure.h"
#include "tuner/progress.h"
#include "tuner/records.h"
#include "tuner/task_list.h"

namespace yoloc::tuner {

/// The best measured configs a sweep (TuneOptions::sweep) sets each value of its knob on.
inline constexpr int kSweepTop = 2;

struct TuneOptions {
  TuneTarget target;
  std::string records;       ///< the records file (appended; read first to resume)
  int64_t batch = 1;         ///< images per run (of the graph the tasks come from)
  int64_t trials = 256;      ///< measurements this run; 0: no limit but the time
  double time_budget_s = 0;  ///< wall seconds; 0: no limit but the trials
  std::string strategy = "evolutionary";
  int round_size = 8;       ///< candidates per round
  int early_stopping = 64;  ///< trials without improvement after which a task stops
  uint64_t seed = 1;
  /// The final re-measurement: each tuned task's default and `verify_top` best configs are
  /// measured again `verify_rounds` times, side by side, so that the config chosen and the
  /// default are compared in the same conditions (a single lucky run on a noisy machine does
  /// not win). It takes the last `verify_share` of a time budget; its trials come on top of a
  /// trial budget. verify_rounds 0: none.
  int verify_top = 2;
  int verify_rounds = 3;
  double verify_share = 0.1;
  /// Build the next rounds while the current one is measured (else one after the other).
  bool overlap = true;
  /// A knob to sweep first (e.g. a new one nobody measured): before its search, each task with
  /// the knob measures, for every other value of its domain, the best measured configs (up to
  /// kSweepTop) that take that value when it is set on them. Empty: none.
  std::string sweep;
  MeasureOptions measure;
};

struct TuneSummary {
  int64_t trials = 0, errors = 0;  ///< this run (the search)
  int64_t verify_trials = 0;       ///< measurements of the final re-measurement
  int resumed = 0;                 ///< matching records read from the file
  int stale = 0;                   ///< records of other versions in the file (ignored)
  /// Tasks without records of their own that started from their twin's best config
  /// (TaskInfo::twin_key) or their workload's at the nearest tuned batch of the file
  /// (nearest_batch_records), measured in their first round.
  int transferred = 0;
  /// Configs the sweep (TuneOptions::sweep) planned ahead of the search, over all tasks.
  int swept = 0;
  /// Wall seconds of the run, of building (while a build was under way: builds at once count
  /// once) and of measuring.
  double seconds = 0, build_s = 0, run_s = 0;
  double build_overlap_s = 0;  ///< of build_s, the seconds spent while measuring
  int dropped_rounds = 0;      ///< built rounds not measured (their task stopped meanwhile)
  int worker_starts = 0;       ///< measurement worker processes started (Measurer::worker_starts)
  bool budget_spent = false;   ///< stopped by the trial or time budget (else: all tasks done)
};

/// Tunes `tasks` (of one model) on `measurer`. Raises a UserError when the records file cannot
/// be read or written, or when neither a trial nor a time budget is given.
TuneSummary tune(const std::vector<TuneTask>& tasks, const TuneOptions& options, Measurer& measurer,
                 ProgressDisplay& progress);

}  // namespace yoloc::tuner
