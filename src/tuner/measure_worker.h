#pragma once
/// What the measurers of every target share: the forked worker process that runs a batch of
/// candidates one after the other with a deadline each, the shared memory its reference outputs
/// come back through, the fault-injection test hook, and parallel builds.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "tuner/measure.h"

namespace yoloc::tuner {

/// How a measurement worker runs the candidates of one batch.
struct WorkerSpec {
  /// Seconds each candidate may take from its start (and the setup as long).
  double timeout_s = 10;
  /// In the worker, once, before the first candidate (e.g. creating a device context). An
  /// exception there is the worker's fatal error: run_worker returns its message.
  std::function<void()> setup;
  /// In the worker: measures candidate i. An exception is the candidate's error ("failed: ...").
  std::function<MeasureResult(size_t i)> run;
  /// Stop the worker after a candidate that threw (its state may be broken, as a CUDA context
  /// is after an illegal address), so that the next candidate gets a fresh worker.
  bool stop_after_exception = false;
  /// In the parent, when candidate i's result has arrived (e.g. to keep the reference outputs the
  /// worker left in shared memory).
  std::function<void(size_t i, const MeasureResult&)> on_result;
};

/// Forks a worker that runs the candidates i >= start with !done[i], in order, and sets
/// results[i] and done[i] for each that finished, crashed (the worker died: "crashed: signal 11
/// (...)") or ran past the deadline (the worker is killed: "timeout: ..."). Returns when the
/// worker is gone, with the worker's fatal setup error (empty when none); the candidates after a
/// crash or a timeout are left not done, for another worker. Several threads may run workers
/// at once (each with its own results, done and spec; one worker per device): the forks are
/// serialised so that no worker holds another's pipe. Other threads of the caller must not
/// hold locks the worker needs (only the forking thread exists in the worker).
std::string run_worker(size_t start, std::vector<MeasureResult>& results, std::vector<bool>& done,
                       const WorkerSpec& spec);

/// Runs `spec` over the candidates until each is done, starting a new worker after each crash,
/// timeout or stop; stops early when `may_start(i)` is false for the first candidate not done
/// (e.g. while there is no reference) or a worker makes no progress. Returns the first fatal
/// setup error (the remaining candidates are then left not done).
std::string run_workers(std::vector<MeasureResult>& results, std::vector<bool>& done,
                        const WorkerSpec& spec, const std::function<bool(size_t)>& may_start);

/// Memory shared with forked workers (anonymous, read-write), unmapped on destruction.
class SharedMemory {
 public:
  /// Raises a UserError when the memory cannot be mapped.
  explicit SharedMemory(size_t bytes);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  std::byte* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
};

/// The test hook MeasureOptions::inject: configs the worker crashes on, hangs on, or computes
/// wrong outputs for.
struct Injection {
  std::string action;         ///< "crash", "hang", "wrong"
  std::string template_name;  ///< empty: any
  std::map<std::string, int64_t> knobs;
};

/// Parses MeasureOptions::inject; raises a UserError for a malformed item.
std::vector<Injection> parse_injections(const std::string& spec);

/// The action of the first injection that matches a config of a task of template `tmpl`, or "".
std::string injected_action(const std::vector<Injection>& injections, const std::string& tmpl,
                            const codegen::ScheduleConfig& c);

/// Runs fn(0..n-1) on up to `jobs` threads (fn must not throw).
void parallel_for_each(size_t n, int jobs, const std::function<void(size_t)>& fn);

/// The start of a (compiler) log, for an error message.
std::string first_lines(const std::string& log, size_t max_chars = 1500);

}  // namespace yoloc::tuner
