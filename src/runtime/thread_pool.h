#pragma once
/// A small persistent thread pool for running generated kernels over their work items (the
/// runtime owns it; the compiler uses it to measure kernels). A network is dozens of short
/// parallel loops back to back, so waking sleeping threads for each would cost more than some
/// kernels take: idle workers spin for a while (~0.1 ms) before they block, like ONNX Runtime's
/// and OpenMP's pools.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace yoloc::runtime {

/// The most threads a pool may have. Asking for more is a UserError (not a silent clamp: a
/// count that large is a typo or a misunderstanding, and each thread costs a stack).
inline constexpr int kMaxPoolThreads = 1024;

class ThreadPool {
 public:
  /// Starts one worker thread running `body` (std::thread by default; tests inject failures).
  using Spawner = std::function<std::thread(std::function<void()> body)>;

  /// A pool of `threads` workers in all (the caller counts as one; 1 <= threads <=
  /// kMaxPoolThreads, else a UserError). When a worker cannot be started (the process or user
  /// is out of threads), the workers already started are stopped and joined and a UserError
  /// names the count that failed: the constructor never leaves a thread behind.
  explicit ThreadPool(int threads, const Spawner& spawn = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  /// Splits [0, items) into threads() contiguous ranges and runs fn(begin, end) on each, the
  /// first on the calling thread; returns when all are done. One caller at a time.
  void parallel_for(int64_t items, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void work(int index);
  void stop_workers();

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t items_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};          ///< workers blocked on start_
  std::atomic<bool> caller_sleeping_{false};  ///< the caller blocked on done_
  std::atomic<bool> stop_{false};
};

}  // namespace yoloc::runtime
