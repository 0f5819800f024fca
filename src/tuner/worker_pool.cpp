#include "tuner/worker_pool.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/error.h"

namespace yoloc::tuner {
namespace {

MeasureResult no_reference(const std::string& why) {
  MeasureResult r;
  r.error = "no reference: " + why;
  r.skipped = true;
  return r;
}

}  // namespace

WorkerPool::WorkerPool(const std::vector<WorkerSpec>& specs) {
  YOLOC_CHECK(!specs.empty(), "WorkerPool: no device");
  for (const WorkerSpec& s : specs) workers_.push_back(std::make_unique<WorkerProcess>(s));
}

int WorkerPool::starts() const {
  int n = 0;
  for (const auto& w : workers_) n += w->starts();
  return n;
}

std::vector<std::string> WorkerPool::run(const WorkerBatch& batch,
                                         std::vector<MeasureResult>& results,
                                         std::vector<bool>& done) {
  const size_t n = batch.requests.size();
  YOLOC_CHECK(results.size() == n && done.size() == n,
              "WorkerPool::run: {} requests, {} results, {} done flags", n, results.size(),
              done.size());
  const long ref = batch.reference;
  YOLOC_CHECK(ref < static_cast<long>(n), "WorkerPool::run: reference {} of {}", ref, n);
  std::vector<size_t> order;  // the reference first: the others are checked against it
  if (ref >= 0 && !done[static_cast<size_t>(ref)]) order.push_back(static_cast<size_t>(ref));
  for (size_t i = 0; i < n; ++i)
    if (!done[i] && static_cast<long>(i) != ref) order.push_back(i);

  std::atomic<size_t> next{0};
  std::vector<char> finished(n, 0);  // not vector<bool>: the threads set distinct elements
  std::vector<std::string> fatal(workers_.size());
  std::mutex mutex;
  std::string reference_failure;  // why the reference failed (in any worker), once it did
  std::vector<std::exception_ptr> raised(workers_.size());  // by a fork that failed
  const auto serve = [&](size_t d) {
    WorkerProcess& w = *workers_[d];
    for (size_t k; (k = next.fetch_add(1)) < order.size();) {
      const size_t i = order[k];
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!reference_failure.empty()) {
          results[i] = no_reference("the default config failed (" + reference_failure + ")");
          finished[i] = 1;
          continue;
        }
      }
      if (static_cast<long>(i) != ref && batch.deadline &&
          std::chrono::steady_clock::now() >= *batch.deadline) {
        results[i] = MeasureResult{};
        results[i].error = "not run: the time budget ended";
        results[i].skipped = true;
        finished[i] = 1;
        continue;
      }
      WorkerProcess::Outcome o = w.call(batch.requests[i]);
      if (o.fatal.empty() && o.reply.need_reference) {
        // This worker has not made the task's reference (or lost it): make it, then retry.
        std::string why = "the task has no reference request";
        if (!batch.reference_request.empty()) {
          const WorkerProcess::Outcome made = w.call(batch.reference_request);
          why = made.reply.result.error;
          if (!made.fatal.empty()) {
            o = made;
          } else if (why.empty() && !made.reply.need_reference) {
            o = w.call(batch.requests[i]);
            if (o.reply.need_reference) why = "the worker lost it";
          } else if (why.empty()) {
            why = "the worker did not make it";
          }
        }
        if (o.fatal.empty() && o.reply.need_reference) {
          // The reference is deterministic: where it failed once, the others would wait for
          // it to fail again (a hang: a deadline each).
          const std::lock_guard<std::mutex> lock(mutex);
          if (reference_failure.empty()) reference_failure = why;
          results[i] = no_reference("the default config failed (" + reference_failure + ")");
          finished[i] = 1;
          continue;
        }
      }
      if (!o.fatal.empty()) {
        fatal[d] = o.fatal;  // candidate i is left not done, as the ones this device had next
        return;
      }
      results[i] = std::move(o.reply.result);
      finished[i] = 1;
      if (static_cast<long>(i) == ref && !results[i].ok()) {
        const std::lock_guard<std::mutex> lock(mutex);
        reference_failure = results[i].error.empty() ? "no time" : results[i].error;
      }
    }
  };
  const auto work = [&](size_t d) {
    try {
      serve(d);
    } catch (...) {
      raised[d] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  std::vector<size_t> unthreaded;
  for (size_t d = 1; d < workers_.size(); ++d) {
    try {
      threads.emplace_back(work, d);
    } catch (const std::system_error&) {
      unthreaded.push_back(d);  // no thread to be had: this device takes what is left after
    }
  }
  work(0);
  for (std::thread& t : threads) t.join();
  for (size_t d : unthreaded) work(d);
  for (size_t i = 0; i < n; ++i)
    if (finished[i]) done[i] = true;
  for (const std::exception_ptr& e : raised)
    if (e) std::rethrow_exception(e);
  return fatal;
}

}  // namespace yoloc::tuner
