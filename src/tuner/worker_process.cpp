#include "tuner/worker_process.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace yoloc::tuner {
namespace {

/// What a worker sends: the first frame says whether it is set up, then for each request "taken"
/// as soon as it has read it, and its reply. A worker that ends before it has taken a request
/// (killed while idle, a moment before the request came) is not the request's fault.
enum Tag : uint8_t { kReady = 1, kFatal = 2, kReply = 3, kTaken = 4 };

/// Replies are small (times and an error message): a longer frame is garbage.
constexpr uint64_t kMaxReplyBytes = 16u << 20;
/// Requests carry built code and constants.
constexpr uint64_t kMaxRequestBytes = uint64_t{1} << 34;

/// Held around each fork, and while the parent's end of a worker's socket is opened or closed:
/// a worker forked by another thread would inherit the other workers' ends, and a worker whose
/// parent end another process holds never sees its socket close. The child closes the ends
/// listed here (they are all live: closing one takes it off first).
std::mutex fork_mutex;
std::vector<int> parent_ends;

void forget_end(int fd) {
  const std::lock_guard<std::mutex> lock(fork_mutex);
  parent_ends.erase(std::remove(parent_ends.begin(), parent_ends.end(), fd), parent_ends.end());
  close(fd);
}

std::string reply_frame(const WorkerReply& rep, bool stopping) {
  ByteWriter w;
  w.u8(kReply);
  w.doubles(rep.result.times);
  w.f64(rep.result.median);
  w.bytes(rep.result.error);
  w.boolean(rep.result.skipped);
  w.boolean(rep.need_reference);
  w.boolean(stopping);
  return w.take();
}

/// In the worker: ends the process as soon as the parent's end of the socket closes, even while
/// a request runs (a hung candidate must not outlive the tuning run).
void watch_parent(int fd) {
  try {
    std::thread([fd] {
      for (;;) {
        pollfd p{fd, POLLRDHUP, 0};
        const int rc = poll(&p, 1, -1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) _exit(0);
      }
    }).detach();
  } catch (const std::system_error&) {
    // No thread: an idle worker still ends at the end of its stream.
  }
}

[[noreturn]] void worker_main(int fd, const WorkerSpec& spec) {
  const auto send = [fd](const std::string& frame) {
    // The parent waits with its own deadline; a worker that cannot write has lost its parent.
    if (!write_frame(fd, frame, WireClock::now() + std::chrono::hours(24))) _exit(2);
  };
  try {
    watch_parent(fd);
    std::function<WorkerReply(std::string_view)> serve;
    try {
      serve = spec.start();
    } catch (const std::exception& e) {
      ByteWriter w;
      w.u8(kFatal);
      w.bytes(e.what());
      send(w.take());
      _exit(0);
    }
    send(std::string(1, static_cast<char>(kReady)));
    std::string request;
    while (read_frame(fd, request, kMaxRequestBytes)) {
      send(std::string(1, static_cast<char>(kTaken)));
      WorkerReply rep;
      bool threw = false;
      try {
        rep = serve(request);
      } catch (const std::exception& e) {
        rep = WorkerReply{};
        rep.result.error = std::string("failed: ") + e.what();
        threw = true;
      }
      const bool stopping = threw && spec.stop_after_exception;
      send(reply_frame(rep, stopping));
      if (stopping) _exit(0);
    }
  } catch (...) {
    _exit(3);
  }
  _exit(0);  // the parent closed the socket: the tuning run is over
}

std::string describe_death(int status, const char* before) {
  if (WIFSIGNALED(status))
    return fmt::format("crashed{}: signal {} ({})", before, WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("crashed{}: the worker exited with status {}", before,
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

}  // namespace

pid_t fork_locked(const std::function<bool()>& open, const std::function<void()>& child,
                  const std::function<void()>& close_child_ends) {
  const std::lock_guard<std::mutex> lock(fork_mutex);
  if (!open()) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    for (int end : parent_ends) close(end);
    child();
    _exit(5);  // `child` must not return
  }
  const int fork_errno = errno;
  close_child_ends();
  errno = fork_errno;
  return pid;
}

MeasureRole measure_role(uint8_t v) {
  if (v > static_cast<uint8_t>(MeasureRole::kReferenceOnly))
    throw MalformedMessage("a request with an unknown role");
  return static_cast<MeasureRole>(v);
}

WorkerProcess::~WorkerProcess() { stop(); }

std::string WorkerProcess::start() {
  YOLOC_CHECK(spec_.start, "WorkerProcess: a spec without a start function");
  int sv[2];
  pid_t pid = -1;
  int fork_errno = 0;
  {
    const std::lock_guard<std::mutex> lock(fork_mutex);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      user_error("tuner: cannot create a socket to a measurement worker: {}", std::strerror(errno));
    pid = fork();
    if (pid == 0) {
      for (int other : parent_ends) close(other);
      close(sv[0]);
      worker_main(sv[1], spec_);
    }
    fork_errno = errno;
    close(sv[1]);
    if (pid > 0) parent_ends.push_back(sv[0]);
  }
  if (pid < 0) {
    close(sv[0]);
    user_error("tuner: cannot fork a measurement worker: {}", std::strerror(fork_errno));
  }
  pid_ = pid;
  fd_ = sv[0];
  frames_ = FrameReader(kMaxReplyBytes);
  ++starts_;
  std::string frame;
  int status = 0;
  Received got = Received::kGone;
  try {
    got = receive(frame,
                  WireClock::now() + std::chrono::duration_cast<WireClock::duration>(
                                         std::chrono::duration<double>(spec_.timeout_s)),
                  status);
  } catch (const MalformedMessage&) {
    kill_and_reap();
    return "the measurement worker sent a malformed message";
  }
  if (got == Received::kTimeout)
    return fmt::format("the measurement worker did not start within {} s", spec_.timeout_s);
  if (got == Received::kGone) return describe_death(status, " before its first candidate");
  try {
    ByteReader r(frame);
    const uint8_t tag = r.u8();
    if (tag == kReady && r.done()) return "";
    if (tag == kFatal) {
      std::string fatal(r.bytes());
      stop();
      return fatal.empty() ? "the measurement worker failed to start" : fatal;
    }
  } catch (const MalformedMessage&) {
  }
  kill_and_reap();
  return "the measurement worker sent a malformed message";
}

WorkerProcess::Received WorkerProcess::receive(std::string& frame, WireClock::time_point deadline,
                                               int& status) {
  for (;;) {
    if (frames_.next(frame)) return Received::kFrame;
    const double left = std::chrono::duration<double>(deadline - WireClock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    const int rc = left <= 0 ? 0 : poll(&p, 1, static_cast<int>(std::ceil(left * 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      status = kill_and_reap();
      return Received::kTimeout;
    }
    char chunk[65536];
    const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      status = reap();
      return Received::kGone;
    }
    frames_.append(chunk, static_cast<size_t>(got));
  }
}

WorkerProcess::Outcome WorkerProcess::call(std::string_view request) {
  Outcome out;
  MeasureResult& r = out.reply.result;
  int status = 0;
  std::string frame;
  try {
    // A worker that ends before it took the request gets one successor, which is sent the
    // request again; one that ends after taking it is the request's crash.
    for (int attempt = 0;; ++attempt) {
      if (pid_ >= 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
        // It died while idle (killed from outside, say): no request of ours is to blame.
        forget_end(fd_);
        pid_ = -1;
        fd_ = -1;
      }
      if (pid_ < 0) {
        out.fatal = start();
        if (!out.fatal.empty()) return out;
      }
      const auto deadline = WireClock::now() + std::chrono::duration_cast<WireClock::duration>(
                                                   std::chrono::duration<double>(spec_.timeout_s));
      // A failed write means the worker is gone or stuck: receive() tells which.
      write_frame(fd_, request, deadline);
      bool taken = false;
      Received got;
      while ((got = receive(frame, deadline, status)) == Received::kFrame && !taken &&
             frame.size() == 1 && static_cast<uint8_t>(frame[0]) == kTaken) {
        taken = true;
      }
      if (got == Received::kTimeout) {
        r.error = fmt::format("timeout: no result after {} s", spec_.timeout_s);
        return out;
      }
      if (got == Received::kGone) {
        if (!taken && attempt == 0) continue;
        r.error = describe_death(status, taken ? "" : " before taking the request, twice");
        return out;
      }
      if (!taken) throw MalformedMessage("a reply to a request not taken");
      break;
    }
    ByteReader rd(frame);
    if (rd.u8() != kReply) throw MalformedMessage("not a reply");
    r.times = rd.doubles();
    r.median = rd.f64();
    r.error = std::string(rd.bytes());
    r.skipped = rd.boolean();
    out.reply.need_reference = rd.boolean();
    const bool stopping = rd.boolean();
    if (!rd.done()) throw MalformedMessage("a reply with bytes after its end");
    if (!r.error.empty()) {
      r.times.clear();
      r.median = 0;
    }
    if (stopping) stop();
  } catch (const MalformedMessage&) {
    // The worker runs untrusted code; a reply that does not parse ends it.
    kill_and_reap();
    out.reply = WorkerReply{};
    r.error = "the worker sent a malformed result";
  }
  return out;
}

int WorkerProcess::reap() {
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  forget_end(fd_);
  pid_ = -1;
  fd_ = -1;
  return status;
}

int WorkerProcess::kill_and_reap() {
  kill(pid_, SIGKILL);
  return reap();
}

int WorkerProcess::stop() {
  if (pid_ < 0) return -1;
  // The worker ends when its socket closes; one that does not within a second is killed.
  forget_end(fd_);
  fd_ = -1;
  int status = 0;
  for (int waited_ms = 0;; ++waited_ms) {
    const pid_t w = waitpid(pid_, &status, WNOHANG);
    if (w == pid_ || (w < 0 && errno != EINTR)) break;
    if (waited_ms == 1000) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    usleep(1000);
  }
  pid_ = -1;
  return status;
}

}  // namespace yoloc::tuner
