#pragma once
/// A small persistent thread pool for running generated kernels over their work items (the
/// runtime owns it; the compiler uses it to measure kernels).
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace yoloc::runtime {

class ThreadPool {
 public:
  /// A pool of `threads` workers in all (the caller counts as one; threads >= 1).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  /// Splits [0, items) into threads() contiguous ranges and runs fn(begin, end) on each, the
  /// first on the calling thread; returns when all are done.
  void parallel_for(int64_t items, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void work(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t items_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace yoloc::runtime
