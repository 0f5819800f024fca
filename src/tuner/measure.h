#pragma once
/// Measuring candidate configs. A Measurer builds a batch of candidates of one task and times
/// them on its device; the CPU one builds several candidates per shared object with at most
/// `build_jobs` host compilers at once, then sends them to its worker process, one candidate
/// after the other, with a deadline each. The worker is forked at the first batch and serves
/// the whole tuning run (worker_pool.h): a candidate that crashes, hangs or computes something
/// else than the task's reference costs one failed result, and a fresh worker takes the rest.
/// A GPU target implements the same interface (NVRTC builds, one worker per device).
///
/// A run of a candidate: its first run's outputs are checked against the reference (the
/// default config's outputs on the same random inputs); then one warm-up run, then `repeats`
/// timed repeats, each running the kernel as often as lasts `min_repeat_s` (or once, after
/// flushing the core's caches). The median repeat is the candidate's time (CPU time with one
/// thread, see cpu_clock).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpu/host_compiler.h"
#include "tuner/task_list.h"

namespace yoloc::tuner {

struct MeasureOptions {
  int threads = 1;              ///< threads a kernel run is split over
  int repeats = 5;              ///< timed repeats
  double min_repeat_s = 0.002;  ///< each repeat runs the kernel at least this long
  double timeout_s = 10;        ///< per candidate in the worker (check, warm-up and repeats)
  /// Write over twice the core's private (L2) cache before each timed repeat, which is then
  /// one run: the kernel starts cold, as it does in a model run.
  bool cache_flush = false;
  /// With one thread, time the thread's CPU time instead of wall time: on a shared machine
  /// the time slices other processes take do not count (cache interference still does).
  bool cpu_clock = true;
  int build_jobs = 2;      ///< compiler processes at once
  int max_per_object = 4;  ///< candidates built into one shared object
  /// A candidate whose first run is this many times slower than the best known time of its
  /// task is timed by that run alone (its repeats would only cost time).
  double max_slowdown = 10;
  double rtol = 1e-3, atol = 1e-4;  ///< output check: |x - ref| <= atol + rtol * |ref|
  /// How candidates are built: as compile builds the host ISA's kernels by default.
  codegen::cpu::HostCompilerOptions cc =
      codegen::cpu::host_compiler_options_for("c++", codegen::cpu::detect_host_isa());
  /// Test hook ("crash:CFG;hang:CFG;wrong@TEMPLATE:CFG"): the worker crashes, hangs or
  /// corrupts the outputs when running a config that has every knob=value of CFG (e.g.
  /// "unroll=2" or "ocb=2,owb=4"), of any task or only of tasks of TEMPLATE (e.g.
  /// "elementwise"). `yoloc tune` takes it from the YOLOC_TUNE_INJECT environment variable.
  std::string inject;
};

struct MeasureResult {
  std::vector<double> times;  ///< seconds per run, one per timed repeat
  double median = 0;          ///< seconds; 0 with an error
  std::string error;          ///< "build failed: ...", "crashed: ...", "timeout ...", ...
  /// Not run at all (the task's reference failed): says nothing about the config, so it is
  /// neither recorded nor counted as a trial.
  bool skipped = false;
  bool ok() const { return !skipped && error.empty() && median > 0; }
  /// Sets `median` from `times` (the upper middle one of an even count); times not empty.
  void set_median() {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    median = sorted[sorted.size() / 2];
  }
};

/// Compiler jobs shared by the builds running at once, each build taking its share in the
/// order the builds were queued (enter): a build queued later never holds the jobs a build
/// queued earlier, which the tuner measures sooner, waits for.
class JobQueue {
 public:
  explicit JobQueue(int jobs) : jobs_(std::max(1, jobs)) {}
  int jobs() const { return jobs_; }
  /// A place at the end of the queue; its build then takes jobs (take) or leaves (leave).
  uint64_t enter();
  /// Place `place` takes min(want, jobs()) jobs (at least 1) once the places before it took
  /// theirs or left and that many are free, and returns how many; a place that took its jobs
  /// already waits only for the jobs.
  int take(uint64_t place, int want);
  /// Place `place` leaves the queue without taking jobs (if it has not taken them).
  void leave(uint64_t place);
  /// Gives back jobs taken.
  void give_back(int count);

 private:
  void consume(uint64_t place);  // mutex_ held
  const int jobs_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int taken_ = 0;
  uint64_t places_ = 0, first_ = 0;  // places given; the first not yet served
  std::set<uint64_t> served_;        // places after first_ served (took jobs or left)
};

/// Jobs of a JobQueue held by a build, given back when the lease ends.
class JobLease {
 public:
  JobLease(JobQueue& q, int count) : q_(&q), count_(count) {}
  JobLease(JobLease&& o) noexcept : q_(std::exchange(o.q_, nullptr)), count_(o.count_) {}
  JobLease& operator=(JobLease&&) = delete;
  ~JobLease() {
    if (q_ != nullptr) q_->give_back(count_);
  }
  int count() const { return count_; }

 private:
  JobQueue* q_;
  int count_;
};

/// One build's place in the measurer's JobQueue (Measurer::build gives it to build_batch).
class BuildJobs {
 public:
  BuildJobs(JobQueue& q, uint64_t place) : q_(q), place_(place) {}
  BuildJobs(const BuildJobs&) = delete;
  BuildJobs& operator=(const BuildJobs&) = delete;
  ~BuildJobs() { q_.leave(place_); }
  /// Takes min(want, the measurer's build jobs) compilers, once that many are free and the
  /// builds queued before took theirs: a build never starts with fewer compilers than it can
  /// use (it would keep them for its whole build while others free up).
  JobLease lease(int want) { return JobLease(q_, q_.take(place_, want)); }

 private:
  JobQueue& q_;
  uint64_t place_;
};

/// A batch of candidates of one task that Measurer::build made, for Measurer::run.
class BuiltBatch {
 public:
  virtual ~BuiltBatch() = default;
};

/// Times candidate configs of a target's tasks, in two steps: build() makes a batch's code (host
/// compiler, NVRTC), run() times it in the workers. Several threads may build at once while
/// another runs (one run at a time): the tuner builds its next rounds while the workers measure
/// the current one, so builds stay off the critical path. The builds running at once share
/// build_jobs() compiler jobs (JobQueue): more rounds built at once never means more compilers
/// than MeasureOptions::build_jobs.
class Measurer {
 public:
  /// `build_jobs`: compiler jobs the builds running at once share (at least 1).
  explicit Measurer(int build_jobs = 1) : jobs_(build_jobs) {}
  virtual ~Measurer() = default;
  /// Builds `configs` (valid configs of `task`); a candidate that does not build gets its error
  /// ("build failed: ...") from run(). It takes its compiler jobs at place `place` of the
  /// queue (queue_build()), else at the end of the queue.
  std::unique_ptr<BuiltBatch> build(const TuneTask& task,
                                    const std::vector<codegen::ScheduleConfig>& configs);
  std::unique_ptr<BuiltBatch> build(const TuneTask& task,
                                    const std::vector<codegen::ScheduleConfig>& configs,
                                    uint64_t place);
  /// A place in the queue for the compiler jobs, for a build() to come (which must come: the
  /// builds queued after wait for it).
  uint64_t queue_build() { return jobs_.enter(); }
  /// Measures a batch of build() and returns one result per config, in order. The first batch
  /// of a task that runs must start with the task's default config: its outputs become the
  /// reference later candidates are checked against (when it fails, every candidate of the task
  /// fails with "no reference"). `best_known_s` (0: none) is the best time of the task so far
  /// (see max_slowdown).
  std::vector<MeasureResult> run(BuiltBatch& batch, double best_known_s);
  /// build() then run().
  std::vector<MeasureResult> measure(const TuneTask& task,
                                     const std::vector<codegen::ScheduleConfig>& configs,
                                     double best_known_s) {
    return run(*build(task, configs), best_known_s);
  }
  /// Wall seconds during which a build() ran (builds running at once count once), seconds
  /// spent in run() so far, and how many of those build seconds passed while a run() ran
  /// (builds hidden behind measurements).
  double build_seconds() const;
  double run_seconds() const;
  double build_overlap_seconds() const;
  /// Measurement worker processes started so far (one per device that measured, plus one per
  /// restart after a crash, a timeout or a stop); 0 for a measurer without workers.
  virtual int worker_starts() const { return 0; }
  /// Compiler jobs the builds share.
  int build_jobs() const { return jobs_.jobs(); }
  /// When the time budget ends (none: nullopt): run() then skips the candidates of its batch it
  /// has not started ("not run: the time budget ended"; the task's reference aside), so that a
  /// round of slow candidates (large batches) does not run on past the budget.
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
    deadline_ = deadline;
  }

 protected:
  /// What build() and run() do, untimed.
  /// `jobs`: its compilers (lease them around the compilations).
  virtual std::unique_ptr<BuiltBatch> build_batch(
      const TuneTask& task, const std::vector<codegen::ScheduleConfig>& configs,
      BuildJobs& jobs) = 0;
  virtual std::vector<MeasureResult> run_batch(BuiltBatch& batch, double best_known_s) = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline() const { return deadline_; }

 private:
  using Interval =
      std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>;
  mutable std::mutex mutex_;
  std::vector<Interval> builds_, runs_;  // each in the order they ended
  JobQueue jobs_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
};

/// The CPU measurer (host compiler, one persistent worker process).
std::unique_ptr<Measurer> make_cpu_measurer(const MeasureOptions& options);

}  // namespace yoloc::tuner
