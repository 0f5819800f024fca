#pragma once
/// The tuning progress display on stderr: one status line rewritten in place on a terminal,
/// plain lines (one per round) otherwise, so logs of CI runs stay readable.
#include <cstdint>
#include <cstdio>
#include <string>

namespace yoloc::tuner {

/// Where a tuning run stands.
struct Progress {
  int task = 0, tasks = 0;  ///< the task of the last round (1-based) and the number of tasks
  std::string task_name;
  int64_t trials = 0;        ///< measured this run
  int64_t trial_budget = 0;  ///< 0: none
  int64_t errors = 0;
  int worker_starts = 0;  ///< measurement workers started so far; 0: not shown
  double best_s = 0, current_s = 0;             ///< the task's best time and the last round's best
  double flops = 0;                             ///< of one run of the task
  double latency_s = 0, default_latency_s = 0;  ///< the model's estimated latency
  double elapsed_s = 0;
  double eta_s = -1;  ///< -1: unknown
};

/// "12.3 us", "1.23 ms", "1.23 s".
std::string format_seconds(double s);
/// "45s", "4m10s", "1h02m".
std::string format_duration(double s);

class ProgressDisplay {
 public:
  /// Writes to `out` (a terminal gets the in-place line); `enabled` false: nothing at all.
  explicit ProgressDisplay(std::FILE* out = stderr, bool enabled = true);
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  void update(const Progress& p);
  /// Shows `line` as the status line (what update() does with a tuning run's line).
  void show(const std::string& line);
  /// A line that stays (above the status line on a terminal).
  void note(const std::string& line);
  /// Ends the status line.
  void finish();
  bool terminal() const { return tty_; }

 private:
  std::FILE* out_;
  bool enabled_, tty_;
  bool line_open_ = false;
  std::string last_;
};

/// The status line of `p` (what update() prints).
std::string progress_line(const Progress& p);

}  // namespace yoloc::tuner
