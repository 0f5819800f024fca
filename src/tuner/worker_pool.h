#pragma once
/// A measurer's workers: one persistent WorkerProcess per device, and a batch of candidates of
/// one task spread over them, one thread of this process per device taking the next candidate
/// not yet taken.
///
/// References: each worker keeps the reference outputs of the tasks it has measured. The first
/// batch of a task starts with its default config, which makes the reference where it runs
/// (and is timed like any candidate); a worker that gets a candidate of a task it holds no
/// reference for (another device's worker, or a fresh one after a crash) answers so, is sent
/// the task's reference request, then the candidate again. So the devices never wait for each
/// other. A reference that fails (in any worker) skips the batch's candidates left ("no
/// reference: ...").
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tuner/worker_process.h"

namespace yoloc::tuner {

/// One batch: the requests of its candidates (of one task).
struct WorkerBatch {
  /// Candidate i's request; not sent for the candidates already done.
  std::vector<std::string> requests;
  /// The candidate that makes the task's reference, or -1 (the task has one).
  long reference = -1;
  /// What makes the task's reference in a worker that lacks it (the default config's request,
  /// untimed); empty while the task has none but the `reference` candidate.
  std::string reference_request;
  /// The time budget's end: a candidate not yet taken then is skipped ("not run: the time
  /// budget ended"), the reference aside (what the others are checked against).
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

class WorkerPool {
 public:
  /// specs[d]: the worker of device d.
  explicit WorkerPool(const std::vector<WorkerSpec>& specs);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Runs the candidates i with !done[i] (the reference first), setting results[i] and done[i]
  /// for each (skipped ones too). Returns each device's fatal error (its worker could not start;
  /// its candidates not taken are left not done), empty when none.
  std::vector<std::string> run(const WorkerBatch& batch, std::vector<MeasureResult>& results,
                               std::vector<bool>& done);

  size_t devices() const { return workers_.size(); }
  /// Worker processes started so far, over the devices.
  int starts() const;
  const WorkerProcess& worker(size_t device) const { return *workers_[device]; }

 private:
  std::vector<std::unique_ptr<WorkerProcess>> workers_;
};

}  // namespace yoloc::tuner
