#include "tuner/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

namespace yoloc::tuner {

std::string format_seconds(double s) {
  if (!(s > 0)) return "-";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string format_duration(double s) {
  if (s < 0) return "?";
  const auto t = static_cast<int64_t>(std::lround(s));
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, t % 3600 / 60);
}

std::string progress_line(const Progress& p) {
  const auto gflops = [&](double s) { return s > 0 ? p.flops / s / 1e9 : 0.0; };
  std::string trials = p.trial_budget > 0 ? fmt::format("{}/{}", p.trials, p.trial_budget)
                                          : fmt::format("{}", p.trials);
  // Workers live for the whole run: more starts than devices are restarts after failures.
  const std::string workers =
      p.worker_starts > 0
          ? fmt::format(", {} worker start{}", p.worker_starts, p.worker_starts == 1 ? "" : "s")
          : std::string();
  return fmt::format(
      "[task {}/{}] {} | trials {} ({} failed{}) | best {} ({:.1f} GFLOP/s) cur {} | model {} "
      "(default {}) | {} elapsed, ETA {}",
      p.task, p.tasks, p.task_name, trials, p.errors, workers, format_seconds(p.best_s),
      gflops(p.best_s), format_seconds(p.current_s), format_seconds(p.latency_s),
      format_seconds(p.default_latency_s), format_duration(p.elapsed_s), format_duration(p.eta_s));
}

ProgressDisplay::ProgressDisplay(std::FILE* out, bool enabled)
    : out_(out), enabled_(enabled), tty_(enabled && isatty(fileno(out))) {}

ProgressDisplay::~ProgressDisplay() { finish(); }

void ProgressDisplay::update(const Progress& p) {
  if (enabled_) show(progress_line(p));
}

void ProgressDisplay::show(const std::string& line) {
  if (!enabled_) return;
  last_ = line;
  if (tty_) {
    // Clear the line and rewrite it, cut to a usual terminal width.
    std::string s = last_.size() > 160 ? last_.substr(0, 157) + "..." : last_;
    std::fprintf(out_, "\r\033[K%s", s.c_str());
    line_open_ = true;
  } else {
    std::fprintf(out_, "%s\n", last_.c_str());
  }
  std::fflush(out_);
}

void ProgressDisplay::note(const std::string& line) {
  if (!enabled_) return;
  if (tty_ && line_open_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", line.c_str());
  if (tty_ && line_open_) {
    std::string s = last_.size() > 160 ? last_.substr(0, 157) + "..." : last_;
    std::fprintf(out_, "%s", s.c_str());
  }
  std::fflush(out_);
}

void ProgressDisplay::finish() {
  if (enabled_ && tty_ && line_open_) std::fprintf(out_, "\n");
  line_open_ = false;
  if (enabled_) std::fflush(out_);
}

}  // namespace yoloc::tuner
