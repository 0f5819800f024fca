#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <system_error>

#include "core/error.h"
#include "test_util.h"

using yoloc::UserError;
using yoloc::runtime::kMaxPoolThreads;
using yoloc::runtime::ThreadPool;


TEST(ThreadPool, RunsEveryItemOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, CountAboveTheCapIsAUserError) {
  const std::string msg = yoloc::testing::error_of([] { ThreadPool pool(kMaxPoolThreads + 1); });
  EXPECT_NE(msg.find(std::to_string(kMaxPoolThreads + 1)), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(kMaxPoolThreads)), std::string::npos) << msg;
  EXPECT_THROW(ThreadPool(0), UserError);
  EXPECT_THROW(ThreadPool(3000), UserError);
}

// A worker that cannot be started (EAGAIN from pthread_create) must stop the ones already
// running: before, they were left waiting on condition variables being destroyed, and the
// constructor never returned.
TEST(ThreadPool, FailedThreadCreationStopsTheStartedWorkers) {
  std::atomic<int> started{0}, finished{0};
  int spawned = 0;
  const ThreadPool::Spawner fail_at_fifth = [&](std::function<void()> body) {
    if (++spawned == 5) throw std::system_error(EAGAIN, std::generic_category(), "pthread_create");
    return std::thread([&, body = std::move(body)] {
      started.fetch_add(1);
      body();
      finished.fetch_add(1);
    });
  };
  const std::string msg = yoloc::testing::error_of([&] { ThreadPool pool(8, fail_at_fifth); });
  EXPECT_NE(msg.find("cannot start worker thread 6 of a 8-thread pool"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--threads"), std::string::npos) << msg;
  EXPECT_EQ(spawned, 5);
  // The four workers that started have returned (joined by the constructor before it threw).
  EXPECT_EQ(started.load(), 4);
  EXPECT_EQ(finished.load(), 4);
}

TEST(ThreadPool, InjectedSpawnerRunsWork) {
  int spawned = 0;
  ThreadPool pool(3, [&](std::function<void()> body) {
    ++spawned;
    return std::thread(std::move(body));
  });
  EXPECT_EQ(spawned, 2);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
  });
  EXPECT_EQ(sum.load(), 4950);
}
