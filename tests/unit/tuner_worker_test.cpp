// Persistent measurement workers: a worker process serves many requests (same pid, one setup),
// a crash or a hang costs one request and the next gets a fresh worker, a worker ends with its
// owner (also when the owner dies in the middle of a request) and is reaped; a pool of
// "devices" runs a batch in parallel, each worker making its own reference; the CPU measurer
// keeps one worker for a whole run and restarts it only after a failure.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <set>
#include <thread>

#include "tuner/cpu_worker.h"
#include "tuner/progress.h"
#include "tuner/search_space.h"
#include "tuner/worker_pool.h"
#include "tuner_test_util.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Counts the setups of this process (each worker is a fresh copy of the test process, where it
/// is 0: only workers set up).
int g_setups = 0;

/// A worker that answers each request with {its pid, its setups, requests it served}, or crashes,
/// hangs or throws when the request says so.
WorkerSpec echo_spec(double timeout_s = 10, bool stop_after_exception = false) {
  WorkerSpec s;
  s.timeout_s = timeout_s;
  s.stop_after_exception = stop_after_exception;
  s.start = [] {
    ++g_setups;
    auto served = std::make_shared<int>(0);
    return [served](std::string_view request) {
      if (request == "crash") std::raise(SIGSEGV);
      if (request == "hang")
        for (;;) pause();
      if (request == "throw") throw std::runtime_error("a bad candidate");
      WorkerReply rep;
      rep.result.times = {static_cast<double>(getpid()), static_cast<double>(g_setups),
                          static_cast<double>(++*served)};
      rep.result.median = 1;
      return rep;
    };
  };
  return s;
}

/// True when process `pid` has ended: reaped (no such process) or a zombie of another parent.
bool ended(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

bool ends_within(pid_t pid, double seconds) {
  const auto t0 = Clock::now();
  while (!ended(pid)) {
    if (seconds_since(t0) > seconds) return false;
    usleep(10000);
  }
  return true;
}

// The process has exited with all its threads, so that waitpid would reap it now (a worker's
// main thread may be a zombie while its socket-watch thread still exits).
bool exited_within(pid_t pid, double seconds) {
  const auto t0 = Clock::now();
  for (;;) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid)
      return true;
    if (seconds_since(t0) > seconds) return false;
    usleep(10000);
  }
}

TEST(TunerWorker, ServesManyRequestsInOneProcess) {
  WorkerProcess w(echo_spec());
  EXPECT_EQ(w.pid(), -1);  // started at the first request
  EXPECT_EQ(w.starts(), 0);
  for (int k = 1; k <= 3; ++k) {
    const WorkerProcess::Outcome o = w.call("measure");
    ASSERT_TRUE(o.fatal.empty()) << o.fatal;
    ASSERT_TRUE(o.reply.result.ok()) << o.reply.result.error;
    ASSERT_EQ(o.reply.result.times.size(), 3u);
    EXPECT_EQ(o.reply.result.times[0], w.pid());
    EXPECT_NE(w.pid(), getpid());
    EXPECT_EQ(o.reply.result.times[1], 1) << "one setup per worker";
    EXPECT_EQ(o.reply.result.times[2], k) << "the same worker served every request";
  }
  EXPECT_EQ(w.starts(), 1);
  EXPECT_EQ(g_setups, 0) << "this process never set up a worker";
}

TEST(TunerWorker, CrashAndHangCostOneRequestAndTheNextGetsAFreshWorker) {
  WorkerProcess w(echo_spec(0.5));
  ASSERT_TRUE(w.call("measure").reply.result.ok());
  const pid_t first = w.pid();

  const WorkerProcess::Outcome crash = w.call("crash");
  // "crashed: signal 11 (...)"; under AddressSanitizer, which turns the fault into exit 1,
  // "crashed: the worker exited with status 1".
  EXPECT_EQ(crash.reply.result.error.rfind("crashed: ", 0), 0u) << crash.reply.result.error;
  EXPECT_EQ(w.pid(), -1);
  EXPECT_TRUE(ended(first));
  EXPECT_EQ(waitpid(first, nullptr, WNOHANG), -1) << "reaped: no zombie left";

  const WorkerProcess::Outcome after_crash = w.call("measure");
  ASSERT_TRUE(after_crash.reply.result.ok()) << after_crash.reply.result.error;
  const pid_t second = w.pid();
  EXPECT_NE(second, first);
  EXPECT_EQ(after_crash.reply.result.times[2], 1) << "a fresh worker";

  const auto t0 = Clock::now();
  const WorkerProcess::Outcome hang = w.call("hang");
  EXPECT_EQ(hang.reply.result.error, "timeout: no result after 0.5 s");
  EXPECT_GE(seconds_since(t0), 0.45);
  EXPECT_LT(seconds_since(t0), 5);
  EXPECT_TRUE(ended(second));
  EXPECT_EQ(waitpid(second, nullptr, WNOHANG), -1);

  const WorkerProcess::Outcome after_hang = w.call("measure");
  ASSERT_TRUE(after_hang.reply.result.ok()) << after_hang.reply.result.error;
  EXPECT_NE(w.pid(), second);
  EXPECT_EQ(w.starts(), 3);
}

TEST(TunerWorker, AWorkerThatDiedWhileIdleIsReplacedWithoutBlame) {
  WorkerProcess w(echo_spec());
  ASSERT_TRUE(w.call("measure").reply.result.ok());
  const pid_t first = w.pid();
  kill(first, SIGKILL);
  ASSERT_TRUE(exited_within(first, 5));
  const WorkerProcess::Outcome o = w.call("measure");
  EXPECT_TRUE(o.reply.result.ok()) << o.reply.result.error;
  EXPECT_NE(w.pid(), first);
  EXPECT_EQ(waitpid(first, nullptr, WNOHANG), -1);
  EXPECT_EQ(w.starts(), 2);
}

// The race the "taken" frame closes: the worker is still alive when the request is sent (so the
// idle check above does not see it), but ends before it reads the request. Stopped, it cannot
// read; killed a moment later, it has not taken the request, which goes to a fresh worker.
TEST(TunerWorker, AWorkerThatDiesJustBeforeTakingARequestIsNotBlamed) {
  WorkerProcess w(echo_spec());
  ASSERT_TRUE(w.call("measure").reply.result.ok());
  const pid_t first = w.pid();
  ASSERT_EQ(kill(first, SIGSTOP), 0);
  std::thread killer([first] {
    usleep(100000);
    kill(first, SIGKILL);
  });
  const WorkerProcess::Outcome o = w.call("measure");
  killer.join();
  EXPECT_TRUE(o.reply.result.ok()) << o.reply.result.error;
  EXPECT_NE(w.pid(), first);
  EXPECT_EQ(o.reply.result.times[2], 1) << "served by a fresh worker";
  EXPECT_EQ(w.starts(), 2);
  EXPECT_EQ(waitpid(first, nullptr, WNOHANG), -1) << "reaped";
}

TEST(TunerWorker, ExceptionsStopTheWorkerOnlyWhenAsked) {
  WorkerProcess keep(echo_spec(10, false));
  ASSERT_TRUE(keep.call("measure").reply.result.ok());
  const pid_t kept = keep.pid();
  const WorkerProcess::Outcome threw = keep.call("throw");
  EXPECT_EQ(threw.reply.result.error, "failed: a bad candidate");
  EXPECT_EQ(keep.pid(), kept);
  EXPECT_EQ(keep.call("measure").reply.result.times.at(2), 2);
  EXPECT_EQ(keep.starts(), 1);

  WorkerProcess stop(echo_spec(10, true));
  ASSERT_TRUE(stop.call("measure").reply.result.ok());
  const pid_t stopped = stop.pid();
  EXPECT_EQ(stop.call("throw").reply.result.error, "failed: a bad candidate");
  EXPECT_EQ(stop.pid(), -1);
  EXPECT_TRUE(ended(stopped));
  const WorkerProcess::Outcome next = stop.call("measure");
  EXPECT_EQ(next.reply.result.times.at(2), 1);
  EXPECT_EQ(stop.starts(), 2);
}

TEST(TunerWorker, ASetupErrorIsFatal) {
  WorkerSpec s = echo_spec();
  s.start = []() -> std::function<WorkerReply(std::string_view)> {
    throw UserError("no device 7");
  };
  WorkerProcess w(s);
  const WorkerProcess::Outcome o = w.call("measure");
  EXPECT_EQ(o.fatal, "no device 7");
  EXPECT_EQ(w.pid(), -1);
  EXPECT_EQ(w.starts(), 1);
}

TEST(TunerWorker, EndsWithItsOwnerAndHoldsNoOtherWorkersSocket) {
  auto a = std::make_unique<WorkerProcess>(echo_spec());
  ASSERT_TRUE(a->call("measure").reply.result.ok());
  const pid_t pa = a->pid();
  // Forked while a runs: it must not keep a's socket open, or a would not see it close.
  WorkerProcess b(echo_spec());
  ASSERT_TRUE(b.call("measure").reply.result.ok());
  const int status = a->stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the worker ended by itself when its socket closed (status " << status << ")";
  a.reset();
  EXPECT_TRUE(ended(pa));
  EXPECT_EQ(waitpid(pa, nullptr, WNOHANG), -1);
  const pid_t pb = b.pid();
  b.stop();
  EXPECT_TRUE(ended(pb));
}

TEST(TunerWorker, EndsWhenItsOwnerDiesInTheMiddleOfARequest) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    // The owner: starts a worker, says its pid, leaves it hanging in a request and dies.
    close(fds[0]);
    auto* w = new WorkerProcess(echo_spec(60));  // never destroyed: the owner just dies
    const pid_t pid = w->call("measure").reply.result.ok() ? w->pid() : -1;
    if (write(fds[1], &pid, sizeof pid) != sizeof pid) _exit(1);
    std::thread([w] { w->call("hang"); }).detach();
    usleep(200000);
    _exit(0);
  }
  close(fds[1]);
  pid_t worker = -1;
  ASSERT_EQ(read(fds[0], &worker, sizeof worker), static_cast<ssize_t>(sizeof worker));
  close(fds[0]);
  ASSERT_GT(worker, 0);
  int status = 0;
  ASSERT_EQ(waitpid(owner, &status, 0), owner);
  EXPECT_TRUE(ends_within(worker, 5)) << "worker " << worker << " outlived its owner";
  if (!ended(worker)) kill(worker, SIGKILL);
}

/// A fake device: "ref" (the reference candidate) and "refonly" make the worker's reference,
/// "cand" needs it; each takes 0.2 s and answers {device, references made in this worker}.
WorkerSpec fake_device(int device) {
  WorkerSpec s;
  s.timeout_s = 10;
  s.start = [device] {
    struct State {
      bool has_reference = false;
      int made = 0;
    };
    auto state = std::make_shared<State>();
    return [device, state](std::string_view request) {
      WorkerReply rep;
      if (request == "crash") std::raise(SIGSEGV);
      if (request == "ref" || request == "refonly") {
        state->has_reference = true;
        ++state->made;
      } else if (!state->has_reference) {
        rep.need_reference = true;
        return rep;
      }
      usleep(200000);
      rep.result.times = {static_cast<double>(device), static_cast<double>(state->made)};
      rep.result.median = 1;
      return rep;
    };
  };
  return s;
}

TEST(TunerWorkerPool, DevicesRunABatchInParallelEachWithItsOwnReference) {
  WorkerPool pool({fake_device(0), fake_device(1)});
  WorkerBatch batch;
  batch.requests = {"ref", "cand", "cand", "cand", "cand", "cand"};
  batch.reference = 0;
  batch.reference_request = "refonly";
  std::vector<MeasureResult> r(6);
  std::vector<bool> done(6, false);
  const auto t0 = Clock::now();
  const std::vector<std::string> fatal = pool.run(batch, r, done);
  const double parallel_s = seconds_since(t0);
  ASSERT_EQ(fatal.size(), 2u);
  EXPECT_TRUE(fatal[0].empty() && fatal[1].empty());
  std::map<int, int> per_device;
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(done[i]);
    ASSERT_TRUE(r[i].ok()) << i << ": " << r[i].error;
    ++per_device[static_cast<int>(r[i].times[0])];
    EXPECT_EQ(r[i].times[1], 1) << "each worker made its reference once";
  }
  EXPECT_GE(per_device[0], 2);
  EXPECT_GE(per_device[1], 2);
  // One device alone: 6 x 0.2 s; two: about half, plus device 1's own reference.
  EXPECT_LT(parallel_s, 1.1);
  EXPECT_EQ(pool.starts(), 2);

  // The next batch of the task: the same workers, which keep their references.
  batch.requests = {"cand", "cand", "cand", "cand"};
  batch.reference = -1;
  r.assign(4, MeasureResult{});
  done.assign(4, false);
  pool.run(batch, r, done);
  for (const MeasureResult& m : r) {
    ASSERT_TRUE(m.ok()) << m.error;
    EXPECT_EQ(m.times[1], 1);
  }
  EXPECT_EQ(pool.starts(), 2);
}

TEST(TunerWorkerPool, ACrashMidBatchRestartsTheWorkerWhichRemakesTheReference) {
  WorkerPool pool({fake_device(0)});
  WorkerBatch batch;
  batch.requests = {"ref", "cand", "crash", "cand", "cand"};
  batch.reference = 0;
  batch.reference_request = "refonly";
  std::vector<MeasureResult> r(5);
  std::vector<bool> done(5, false);
  done[4] = true;  // e.g. a build failure: not sent
  r[4].error = "build failed: x";
  pool.run(batch, r, done);
  EXPECT_TRUE(r[0].ok() && r[1].ok() && r[3].ok());
  EXPECT_NE(r[2].error.find("crashed"), std::string::npos) << r[2].error;
  EXPECT_EQ(r[3].times.at(1), 1) << "the fresh worker made its own reference";
  EXPECT_EQ(r[4].error, "build failed: x");
  EXPECT_EQ(pool.starts(), 2);
}

TEST(TunerWorkerPool, AFailedReferenceSkipsTheRest) {
  WorkerPool pool({fake_device(0), fake_device(1)});
  WorkerBatch batch;
  batch.requests = {"crash", "cand", "cand"};
  batch.reference = 0;
  batch.reference_request = "crash";
  std::vector<MeasureResult> r(3);
  std::vector<bool> done(3, false);
  pool.run(batch, r, done);
  EXPECT_NE(r[0].error.find("crashed"), std::string::npos) << r[0].error;
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_TRUE(done[i]);
    EXPECT_TRUE(r[i].skipped) << r[i].error;
    EXPECT_EQ(r[i].error.rfind("no reference: ", 0), 0u) << r[i].error;
  }

  // A later batch on a fresh worker whose reference request fails: tried once, not per
  // candidate.
  WorkerPool lone({fake_device(0)});
  batch.requests = {"cand", "cand", "cand"};
  batch.reference = -1;
  r.assign(3, MeasureResult{});
  done.assign(3, false);
  lone.run(batch, r, done);
  for (const MeasureResult& m : r) {
    EXPECT_TRUE(m.skipped);
    EXPECT_EQ(m.error.rfind("no reference: the default config failed (crashed: ", 0), 0u)
        << m.error;
  }
  EXPECT_EQ(lone.starts(), 1);
}

// A deadline (the time budget's end) reached mid-batch: the reference still runs, the
// candidates taken after it are skipped, not run.
TEST(TunerWorkerPool, ADeadlineSkipsTheCandidatesNotYetTaken) {
  WorkerPool pool({fake_device(0)});
  WorkerBatch batch;
  batch.requests = {"ref", "cand", "cand", "cand", "cand"};
  batch.reference = 0;
  batch.reference_request = "refonly";
  // Each request takes 0.2 s: the last two would start 0.6 s and 0.8 s in at the earliest.
  batch.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  std::vector<MeasureResult> r(5);
  std::vector<bool> done(5, false);
  pool.run(batch, r, done);
  EXPECT_TRUE(r[0].ok()) << r[0].error;
  for (size_t i = 3; i < 5; ++i) {
    EXPECT_TRUE(done[i]);
    EXPECT_TRUE(r[i].skipped);
    EXPECT_EQ(r[i].error, "not run: the time budget ended");
  }
  // One already past: only the reference runs.
  batch.deadline = std::chrono::steady_clock::now();
  r.assign(5, MeasureResult{});
  done.assign(5, false);
  WorkerPool fresh({fake_device(0)});
  fresh.run(batch, r, done);
  EXPECT_TRUE(r[0].ok()) << r[0].error;
  for (size_t i = 1; i < 5; ++i) EXPECT_TRUE(r[i].skipped) << i;
}

TEST(TunerWire, CpuRequestsRoundTripAndTruncationIsMalformed) {
  CpuRequest q;
  q.role = MeasureRole::kReference;
  q.task = "elementwise n1 c32";
  q.batch = 2;
  q.args.resize(3);
  q.args[0].kind = codegen::cpu::KernelArg::Kind::kActivation;
  q.args[0].bytes = 4608;
  q.args[1].kind = codegen::cpu::KernelArg::Kind::kConstant;
  q.args[1].data = {1.5f, -2.f};
  q.args[2].kind = codegen::cpu::KernelArg::Kind::kActivation;
  q.args[2].output = true;
  q.args[2].bytes = 4608;
  q.object = 7;
  q.so =
      std::make_shared<const std::string>(std::string("\x7f"
                                                      "ELF\0\1",
                                                      6));
  q.symbol = "yc_m3";
  q.items = 36;
  q.action = "hang";
  q.best_known_s = 1e-5;
  const std::string m = encode_cpu_request(q);
  const CpuRequest d = decode_cpu_request(m);
  EXPECT_EQ(d.role, MeasureRole::kReference);
  EXPECT_EQ(d.task, q.task);
  EXPECT_EQ(d.batch, 2);
  ASSERT_EQ(d.args.size(), 3u);
  EXPECT_EQ(d.args[1].data, (std::vector<float>{1.5f, -2.f}));
  EXPECT_TRUE(d.args[2].output);
  EXPECT_EQ(d.args[2].bytes, 4608u);
  EXPECT_EQ(*d.so, *q.so);
  EXPECT_EQ(d.object, 7u);
  EXPECT_EQ(d.symbol, "yc_m3");
  EXPECT_EQ(d.items, 36);
  EXPECT_EQ(d.action, "hang");
  EXPECT_EQ(d.best_known_s, 1e-5);
  EXPECT_THROW(decode_cpu_request(std::string_view(m).substr(0, m.size() - 1)), MalformedMessage);
  EXPECT_THROW(decode_cpu_request(m + "x"), MalformedMessage);
}

TEST(TunerProgress, ShowsWorkerStarts) {
  Progress p;
  p.worker_starts = 3;
  EXPECT_NE(progress_line(p).find("(0 failed, 3 worker starts)"), std::string::npos)
      << progress_line(p);
  p.worker_starts = 0;
  EXPECT_NE(progress_line(p).find("(0 failed)"), std::string::npos) << progress_line(p);
}

/// The elementwise task of the small graph (unroll 1, its default, 2, 4, 8, 16).
const TuneTask& elementwise(const std::vector<TuneTask>& tasks) {
  const TuneTask* t = testing::task_of(tasks, "elementwise");
  YOLOC_CHECK(t != nullptr, "no elementwise task");
  return *t;
}

ScheduleConfig unroll(const TuneTask& t, int64_t u) {
  const auto valid = enumerate_valid(t.task);
  for (const ScheduleConfig& c : valid.value())
    if (c.get("unroll") == u) return c;
  ADD_FAILURE() << "no unroll " << u;
  return t.task.default_config;
}

MeasureOptions quick_options() {
  MeasureOptions o;
  o.timeout_s = 1;
  o.repeats = 2;
  o.min_repeat_s = 1e-4;
  return o;
}

TEST(TunerMeasure, OneWorkerServesEveryRoundOfARun) {
  const auto g = testing::small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  auto m = make_cpu_measurer(quick_options());
  EXPECT_EQ(m->worker_starts(), 0);
  // Two tasks, rounds interleaved as the scheduler does, then the re-measurement of a config
  // built before.
  const TuneTask& e = elementwise(tasks);
  const TuneTask& conv = *testing::task_of(tasks, "conv");
  for (const auto& r : m->measure(e, {e.task.default_config, unroll(e, 2)}, 0))
    EXPECT_TRUE(r.ok()) << r.error;
  for (const auto& r : m->measure(conv, {conv.task.default_config}, 0))
    EXPECT_TRUE(r.ok()) << r.error;
  for (const auto& r : m->measure(e, {unroll(e, 4), unroll(e, 8)}, 0))
    EXPECT_TRUE(r.ok()) << r.error;
  for (const auto& r : m->measure(e, {unroll(e, 2), e.task.default_config}, 0))
    EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(m->worker_starts(), 1);
}

TEST(TunerMeasure, ACrashAndAHangMidRoundRestartTheWorkerForTheRest) {
  const auto g = testing::small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  const TuneTask& e = elementwise(tasks);
  MeasureOptions o = quick_options();
  o.inject = "crash@elementwise:unroll=2;hang@elementwise:unroll=4;wrong@elementwise:unroll=8";
  auto m = make_cpu_measurer(o);
  const std::vector<ScheduleConfig> configs = {e.task.default_config, unroll(e, 2), unroll(e, 16),
                                               unroll(e, 4), unroll(e, 8)};
  const std::vector<MeasureResult> r = m->measure(e, configs, 0);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[0].ok()) << r[0].error;
  EXPECT_EQ(r[1].error.rfind("crashed: ", 0), 0u) << r[1].error;
  // After the crash, a fresh worker: it makes the reference again and checks against it.
  EXPECT_TRUE(r[2].ok()) << r[2].error;
  EXPECT_EQ(r[2].times.size(), 2u);
  EXPECT_EQ(r[3].error, "timeout: no result after 1 s");
  EXPECT_NE(r[4].error.find("wrong output"), std::string::npos) << r[4].error;
  EXPECT_EQ(m->worker_starts(), 3);
  // The third worker serves the next round.
  EXPECT_TRUE(m->measure(e, {unroll(e, 16)}, 0).at(0).ok());
  EXPECT_EQ(m->worker_starts(), 3);
}

TEST(TunerMeasure, APersistentWorkerAgreesWithAFreshWorkerPerRound) {
  // The old way, a worker per round (here: a measurer per round, whose first round makes the
  // reference), and one worker for every round give the same outcomes and comparable times.
  const auto g = testing::small_tuning_graph();
  const std::vector<TuneTask> tasks = tuning_tasks(*g);
  const TuneTask& e = elementwise(tasks);
  MeasureOptions o = quick_options();
  o.repeats = 3;
  o.min_repeat_s = 2e-3;
  o.inject = "wrong@elementwise:unroll=8";
  const std::vector<std::vector<ScheduleConfig>> rounds = {
      {e.task.default_config, unroll(e, 2)}, {unroll(e, 8), unroll(e, 4)}, {unroll(e, 16)}};
  auto persistent = make_cpu_measurer(o);
  for (size_t k = 0; k < rounds.size(); ++k) {
    const auto kept = persistent->measure(e, rounds[k], 0);
    auto fresh = make_cpu_measurer(o);
    std::vector<ScheduleConfig> with_reference = rounds[k];
    if (k > 0) with_reference.insert(with_reference.begin(), e.task.default_config);
    std::vector<MeasureResult> alone = fresh->measure(e, with_reference, 0);
    if (k > 0) alone.erase(alone.begin());
    EXPECT_EQ(fresh->worker_starts(), 1);
    ASSERT_EQ(kept.size(), alone.size());
    for (size_t i = 0; i < kept.size(); ++i) {
      SCOPED_TRACE(rounds[k][i].str());
      EXPECT_EQ(kept[i].ok(), alone[i].ok()) << kept[i].error << " / " << alone[i].error;
      EXPECT_EQ(kept[i].error.substr(0, 12), alone[i].error.substr(0, 12));
      if (!kept[i].ok() || !alone[i].ok()) continue;
      EXPECT_LT(kept[i].median, 5 * alone[i].median);
      EXPECT_LT(alone[i].median, 5 * kept[i].median);
    }
  }
  EXPECT_EQ(persistent->worker_starts(), 1);
}

}  // namespace
}  // namespace yoloc::tuner
