#include "tuner/isolate.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>

#include "tuner/worker_process.h"

namespace yoloc::tuner {

std::optional<std::string> run_isolated(const std::function<std::string()>& fn, double timeout_s,
                                        std::string& error) {
  int fds[2] = {-1, -1};
  bool piped = false;
  // Under the workers' fork lock: a measurement worker forked by another thread while the write
  // end is open here would hold it, and the read below would not end before that worker.
  const pid_t pid = fork_locked(
      [&] { return piped = pipe2(fds, O_CLOEXEC) == 0; },
      [&] {
        // Its own process group, so that a timeout also stops what it started (a compile's
        // host compiler holds the caller's stdout open); gone with the caller.
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(fds[0]);
        int code = 0;
        std::string out;
        try {
          out = fn();
        } catch (const std::exception& e) {
          out = e.what();
          code = 2;
        } catch (...) {
          code = 3;
        }
        for (size_t off = 0; off < out.size();) {
          const ssize_t w = write(fds[1], out.data() + off, out.size() - off);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) _exit(4);
          off += static_cast<size_t>(w);
        }
        _exit(code);
      },
      [&] { close(fds[1]); });
  if (pid < 0) {
    error = fmt::format("cannot {}: {}", piped ? "fork" : "create a pipe", std::strerror(errno));
    if (piped) close(fds[0]);
    return std::nullopt;
  }
  setpgid(pid, pid);  // as the child does: whichever runs first
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  for (;;) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    pollfd p{fds[0], POLLIN, 0};
    const int rc = left <= 0 ? 0 : poll(&p, 1, static_cast<int>(std::ceil(left * 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      kill(-pid, SIGKILL);
      timed_out = true;
      break;
    }
    char buf[65536];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    error = fmt::format("timeout: no result after {} s", timeout_s);
    return std::nullopt;
  }
  if (WIFSIGNALED(status)) {
    error = fmt::format("crashed: signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return std::nullopt;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 2 || code == 3) {  // fn threw
    error = "failed: " + (out.empty() ? std::string("an unknown exception") : out);
    return std::nullopt;
  }
  if (code != 0) {
    // Another status: the child died on its own (a sanitizer turns a fault into exit 1).
    error = fmt::format("crashed: the child exited with status {}", code);
    return std::nullopt;
  }
  return out;
}

}  // namespace yoloc::tuner
