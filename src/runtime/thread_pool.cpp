#include "runtime/thread_pool.h"

#include <chrono>

#include "core/error.h"

namespace yoloc::runtime {
namespace {

std::pair<int64_t, int64_t> range_of(int64_t items, int parts, int i) {
  return {items * i / parts, items * (i + 1) / parts};
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Spins until done() or about `budget` has passed; true when done() held.
template <class Done>
bool spin_until(Done done, std::chrono::microseconds budget) {
  const auto end = std::chrono::steady_clock::now() + budget;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    // Yield now and then: when the machine has fewer free cores than pool threads, the thread
    // being waited for may need this core to finish.
    if ((i & 63) == 63) std::this_thread::yield();
    if ((i & 255) == 255 && std::chrono::steady_clock::now() > end) return done();
  }
}

constexpr std::chrono::microseconds kSpin{200};

}  // namespace

ThreadPool::ThreadPool(int threads, const Spawner& spawn) : threads_(threads) {
  if (threads < 1 || threads > kMaxPoolThreads)
    user_error("a thread pool of {} threads: the count must be between 1 and {} (use --threads "
               "N, or 0 for the machine's hardware threads)",
               threads, kMaxPoolThreads);
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) {
    std::function<void()> body = [this, i] { work(i); };
    try {
      workers_.push_back(spawn ? spawn(std::move(body)) : std::thread(std::move(body)));
    } catch (const std::exception& e) {
      // The destructor will not run: stop and join the workers already started, else they
      // would wait on condition variables that are being destroyed.
      stop_workers();
      user_error("cannot start worker thread {} of a {}-thread pool ({}): the process is out of "
                 "threads or memory; use fewer threads (--threads N)",
                 i + 1, threads, e.what());
    }
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

void ThreadPool::parallel_for(int64_t items, const std::function<void(int64_t, int64_t)>& fn) {
  if (workers_.empty() || items <= 1) {
    fn(0, items);
    return;
  }
  fn_ = &fn;
  items_ = items;
  pending_.store(static_cast<int>(workers_.size()));
  // Publishes fn_ / items_ (sequentially consistent: a worker that counts itself a sleeper
  // after this either sees the new generation or is woken below).
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    start_.notify_all();
  }
  const auto [b, e] = range_of(items, threads(), 0);
  fn(b, e);
  if (!spin_until([this] { return pending_.load() == 0; }, kSpin)) {
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeping_ = true;
    done_.wait(lock, [this] { return pending_.load() == 0; });
    caller_sleeping_ = false;
  }
  fn_ = nullptr;
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  for (;;) {
    const auto fresh = [&] { return stop_.load() || generation_.load() != seen; };
    if (!spin_until(fresh, kSpin)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      start_.wait(lock, fresh);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    const auto [b, e] = range_of(items_, threads(), index);
    if (b < e) (*fn_)(b, e);
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      done_.notify_one();
    }
  }
}

}  // namespace yoloc::runtime
