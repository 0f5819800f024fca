#pragma once
/// A persistent measurement worker: a forked child process that serves requests (one candidate
/// each) for a whole tuning run, so that what it sets up once (a CUDA context, a thread pool) and
/// what it keeps per task (inputs, reference outputs, device buffers) is not made again for every
/// round. Requests and replies are frames on a stream socket (wire.h).
///
/// The parent keeps a deadline per request: a worker that runs past it is killed ("timeout: ..."),
/// one that dies is reaped ("crashed: signal 11 (...)"); either way the next request starts a
/// fresh worker. The worker ends when its socket closes (the parent's destructor, or the parent's
/// death), even in the middle of a request: a thread of the worker watches the socket.
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "tuner/measure.h"
#include "tuner/wire.h"

namespace yoloc::tuner {

/// What a measurement request asks of its worker (the requests of every target carry it).
enum class MeasureRole : uint8_t {
  kCandidate,      ///< checked against the task's reference, then timed
  kReference,      ///< makes the task's reference in this worker, then is timed
  kReferenceOnly,  ///< makes the task's reference in this worker; not timed
};

/// The role encoded as `v`; raises MalformedMessage for another value.
MeasureRole measure_role(uint8_t v);

/// What a worker answers to one request.
struct WorkerReply {
  MeasureResult result;
  /// The request needs task state the worker lacks (a reference made by an earlier request, lost
  /// with an earlier worker or evicted): nothing was run. The parent sends what makes it, then
  /// the request again.
  bool need_reference = false;
};

/// How a worker of any target answers request q of a task whose state is t (with a
/// has_reference flag): a candidate of a task without a reference here asks for it; a request
/// that makes the reference drops the old one first; then run() measures.
template <class Request, class TaskState, class Run>
WorkerReply serve_request(const Request& q, TaskState& t, Run&& run) {
  WorkerReply rep;
  if (q.role == MeasureRole::kCandidate && !t.has_reference) {
    rep.need_reference = true;
    return rep;
  }
  if (q.role != MeasureRole::kCandidate) t.has_reference = false;
  rep.result = run();
  return rep;
}

/// Drops the least recently used entries of a worker's `cache` (a map whose values carry a
/// `used` tick) while `over()` says it holds too much, keeping at least one entry (the one just
/// used, which has the highest tick).
template <class Map, class Over>
void evict_lru(Map& cache, Over&& over) {
  while (cache.size() > 1 && over()) {
    auto oldest = cache.begin();
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->second.used < oldest->second.used) oldest = it;
    cache.erase(oldest);
  }
}

/// Forks under the lock the worker starts take, so that a child forked by one thread and a worker
/// started by another do not inherit each other's pipe and socket ends (a reader whose pipe's
/// write end another process holds never sees its end). Under the lock: `open` opens what the
/// child needs (false: it failed, nothing is forked); the child closes the parent ends of the
/// workers' sockets and runs `child` (which must not return: _exit); the parent then runs
/// `close_child_ends`. Returns fork()'s result: -1 when `open` or the fork failed, with errno.
pid_t fork_locked(const std::function<bool()>& open, const std::function<void()>& child,
                  const std::function<void()>& close_child_ends);

/// How a worker starts and serves requests.
struct WorkerSpec {
  /// Seconds each request may take (and the start as long).
  double timeout_s = 10;
  /// End the worker after a request that threw (its state may be broken, as a CUDA context is
  /// after an illegal address), so that the next request gets a fresh worker.
  bool stop_after_exception = false;
  /// In the worker, once, after the fork: sets it up and returns the function that serves each
  /// request (which owns the worker's state). An exception here is the worker's fatal error; one
  /// from a request is that request's error ("failed: ...").
  std::function<std::function<WorkerReply(std::string_view request)>()> start;
};

/// One worker process, started at the first request and again after a crash, a timeout or a
/// stop. Not thread-safe: one thread at a time calls it (a device's thread of a round).
class WorkerProcess {
 public:
  explicit WorkerProcess(WorkerSpec spec) : spec_(std::move(spec)) {}
  /// Ends the worker (see stop()).
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  /// The outcome of a request: the reply (a timeout or a crash is its result's error), or the
  /// fatal error of a worker that could not start (then no reply).
  struct Outcome {
    WorkerReply reply;
    std::string fatal;
  };
  /// Sends `request` to the worker (started first when none runs) and waits for its reply.
  Outcome call(std::string_view request);

  /// Closes the worker's socket, which ends it, and reaps it (killed when it has not exited
  /// within a second). Returns its wait status; -1 when none ran.
  int stop();
  /// Workers started so far.
  int starts() const { return starts_.load(); }
  /// The running worker's process id; -1 when none runs.
  pid_t pid() const { return pid_; }

 private:
  /// Forks the worker and waits until it is set up; returns its fatal error (empty: it runs).
  std::string start();
  enum class Received { kFrame, kTimeout, kGone };
  /// Waits for the worker's next frame until `deadline`. On a timeout the worker is killed; on a
  /// timeout or the end of the stream it is reaped, with its wait status in `status`. Raises
  /// MalformedMessage for a frame over the limit.
  Received receive(std::string& frame, WireClock::time_point deadline, int& status);
  /// Kills the worker and reaps it; returns its wait status.
  int kill_and_reap();
  /// Waits for the worker to end; returns its wait status.
  int reap();

  WorkerSpec spec_;
  pid_t pid_ = -1;
  int fd_ = -1;
  FrameReader frames_{0};
  std::atomic<int> starts_{0};
};

}  // namespace yoloc::tuner
