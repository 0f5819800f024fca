#include "runtime/thread_pool.h"

#include "core/error.h"

namespace yoloc::runtime {
namespace {

std::pair<int64_t, int64_t> range_of(int64_t items, int parts, int i) {
  return {items * i / parts, items * (i + 1) / parts};
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  YOLOC_CHECK(threads >= 1, "thread pool needs at least one thread, got {}", threads);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t items, const std::function<void(int64_t, int64_t)>& fn) {
  if (workers_.empty() || items <= 1) {
    fn(0, items);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    items_ = items;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  const auto [b, e] = range_of(items, threads(), 0);
  fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* fn;
    int64_t items;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      items = items_;
    }
    const auto [b, e] = range_of(items, threads(), index);
    if (b < e) (*fn)(b, e);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    done_.notify_one();
  }
}

}  // namespace yoloc::runtime
