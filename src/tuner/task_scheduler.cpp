#include "tuner/task_scheduler.h"

#include "core/error.h"

namespace yoloc::tuner {

TaskScheduler::TaskScheduler(std::vector<double> weights, std::vector<double> estimates, Options o)
    : opt_(o) {
  YOLOC_CHECK(weights.size() == estimates.size(), "scheduler: {} weights for {} tasks",
              weights.size(), estimates.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    Task t;
    t.weight = weights[i];
    t.estimate = estimates[i];
    tasks_.push_back(t);
  }
}

double TaskScheduler::seconds(int i) const {
  const Task& t = tasks_[static_cast<size_t>(i)];
  return t.best > 0 ? t.best : estimate(i);
}

double TaskScheduler::estimate(int i) const {
  const double e = tasks_[static_cast<size_t>(i)].estimate;
  return estimated_sum_ > 0 ? e * measured_sum_ / estimated_sum_ : e;
}

void TaskScheduler::calibrate(int i, double seconds) {
  measured_sum_ += seconds;
  estimated_sum_ += tasks_[static_cast<size_t>(i)].estimate;
}

double TaskScheduler::latency() const {
  double s = 0;
  for (size_t i = 0; i < tasks_.size(); ++i) s += tasks_[i].weight * seconds(static_cast<int>(i));
  return s;
}

int TaskScheduler::next() const {
  int best = -1;
  double best_score = -1;
  // First every task once, heaviest first.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    if (t.done || !t.history.empty() || t.pending > 0) continue;
    const double score = t.weight * seconds(static_cast<int>(i));
    if (score > best_score) best = static_cast<int>(i), best_score = score;
  }
  if (best >= 0) return best;
  const double total = latency();
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    if (t.done) continue;
    const double share = t.weight * seconds(static_cast<int>(i)) / total;
    // Relative cut of the best time over the last `window` rounds (none while a task's first
    // round is under way). The rounds under way count as rounds given.
    const size_t n = t.history.size();
    double gain = 0;
    if (n > 0) {
      const double before =
          t.history[n > static_cast<size_t>(opt_.window) ? n - 1 - opt_.window : 0];
      const double now = t.history[n - 1];
      gain = before > 0 && now > 0 ? (before - now) / before : 0;
    }
    const double score =
        share * (gain + opt_.explore / static_cast<double>(n + static_cast<size_t>(t.pending)));
    if (score > best_score) best = static_cast<int>(i), best_score = score;
  }
  return best;
}

void TaskScheduler::begin(int i) { ++tasks_[static_cast<size_t>(i)].pending; }

void TaskScheduler::drop(int i) {
  Task& t = tasks_[static_cast<size_t>(i)];
  if (t.pending > 0) --t.pending;
}

void TaskScheduler::update(int i, int trials, double best_s) {
  Task& t = tasks_[static_cast<size_t>(i)];
  if (t.pending > 0) --t.pending;
  const bool gained = best_s > 0 && (t.best <= 0 || best_s < t.best * (1 - opt_.min_gain));
  t.trials_since_gain = gained ? 0 : t.trials_since_gain + trials;
  if (best_s > 0 && (t.best <= 0 || best_s < t.best)) t.best = best_s;
  t.history.push_back(t.best);
  if (opt_.early_stopping > 0 && t.trials_since_gain >= opt_.early_stopping) t.done = true;
}

void TaskScheduler::seed(int i, double best_s) {
  Task& t = tasks_[static_cast<size_t>(i)];
  if (best_s > 0 && (t.best <= 0 || best_s < t.best)) t.best = best_s;
}

void TaskScheduler::finish(int i) { tasks_[static_cast<size_t>(i)].done = true; }

}  // namespace yoloc::tuner
