#pragma once
/// Which task gets the next round of trials: a simplified form of Ansor's gradient task
/// scheduler. The model's latency is estimated as the sum over tasks of (runs per model run) x
/// (best time so far); each round goes to the task whose next trials are expected to cut it
/// most: its share of the latency times its recent relative improvement (plus a small
/// exploration term that decays with its rounds, so a task that has not improved yet is still
/// retried now and then). Every task gets one round before any gets a second, the heaviest
/// first. A task stops early after `early_stopping` trials without an improvement.
///
/// Rounds may overlap (the tuner builds the next round while the current one is measured):
/// begin() says a round of a task is under way before its update() comes, so that the first
/// pass does not give that task a second round meanwhile.
#include <cstddef>
#include <vector>

namespace yoloc::tuner {

class TaskScheduler {
 public:
  struct Options {
    int early_stopping = 64;  ///< trials without improvement after which a task stops (0: never)
    double min_gain = 0.005;  ///< an improvement is a relative cut of at least this much
    int window = 3;           ///< rounds the recent improvement is measured over
    double explore = 0.05;    ///< the exploration term's weight
  };

  /// `weights`: runs of each task per run of the model; `estimates`: seconds of each task's run
  /// before anything is measured (both > 0).
  TaskScheduler(std::vector<double> weights, std::vector<double> estimates, Options o);
  TaskScheduler(std::vector<double> weights, std::vector<double> estimates)
      : TaskScheduler(std::move(weights), std::move(estimates), Options{}) {}

  /// The task to give the next round to; -1 when every task is done.
  int next() const;
  /// A round of task `i` is under way (its update() or drop() comes later).
  void begin(int i);
  /// The round of task `i` under way is dropped (not measured).
  void drop(int i);
  /// A round of `trials` measurements of task `i` ended with `best_s` as its best time (0: no
  /// valid time yet); it ends the round begun for it, if any.
  void update(int i, int trials, double best_s);
  /// Task `i`'s best time from earlier runs (records), before its first round.
  void seed(int i, double best_s);
  /// Task `i`'s default config took `seconds`: the estimates of the tasks not measured yet are
  /// scaled by how far the measured ones were off (sum of measured / sum of their estimates).
  void calibrate(int i, double seconds);
  /// Task `i` gets no more trials (its space is exhausted or its reference failed).
  void finish(int i);

  bool done(int i) const { return tasks_[static_cast<size_t>(i)].done; }
  int rounds(int i) const {
    return static_cast<int>(tasks_[static_cast<size_t>(i)].history.size());
  }
  /// Best time of task `i` so far, or its (calibrated) estimate.
  double seconds(int i) const;
  /// The (calibrated) estimate of task `i`'s time.
  double estimate(int i) const;
  /// The model's estimated latency: the weighted sum of seconds().
  double latency() const;

 private:
  struct Task {
    double weight = 1, estimate = 0, best = 0;
    std::vector<double> history;  // best after each round (0: none)
    int trials_since_gain = 0;
    int pending = 0;  // rounds begun, not yet updated
    bool done = false;
  };
  std::vector<Task> tasks_;
  Options opt_;
  double measured_sum_ = 0, estimated_sum_ = 0;  // of the calibrated tasks
};

}  // namespace yoloc::tuner
