#include "tuner/measure_worker.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/strings.h"

namespace yoloc::tuner {
namespace {

using Clock = std::chrono::steady_clock;

/// Held from a worker's pipe() until the parent has closed the pipe's write end, across the
/// fork: a worker forked by another thread in between would inherit that write end, and the
/// parent would see no end of file when its own worker dies (a crash would read as a timeout).
std::mutex fork_mutex;

/// Writes one JSON line to the parent (the worker's only channel).
void send(int fd, const nlohmann::json& j) {
  const std::string line = j.dump() + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t w = ::write(fd, line.data() + off, line.size() - off);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      _exit(2);
    }
    off += static_cast<size_t>(w);
  }
}

[[noreturn]] void worker_main(int fd, size_t start, const std::vector<bool>& done,
                              const WorkerSpec& spec) {
  try {
    try {
      if (spec.setup) spec.setup();
    } catch (const std::exception& e) {
      send(fd, {{"fatal", e.what()}});
      _exit(0);
    }
    for (size_t i = start; i < done.size(); ++i) {
      if (done[i]) continue;
      send(fd, {{"begin", i}});
      nlohmann::json out = {{"result", i}};
      bool threw = false;
      try {
        const MeasureResult r = spec.run(i);
        out["times"] = r.times;
        out["median"] = r.median;
        out["error"] = r.error;
        out["skipped"] = r.skipped;
      } catch (const std::exception& e) {
        out["error"] = std::string("failed: ") + e.what();
        threw = true;
      }
      send(fd, out);
      if (threw && spec.stop_after_exception) _exit(0);
    }
  } catch (...) {
    _exit(3);
  }
  _exit(0);
}

}  // namespace

std::string run_worker(size_t start, std::vector<MeasureResult>& results, std::vector<bool>& done,
                       const WorkerSpec& spec) {
  const size_t n = results.size();
  YOLOC_CHECK(done.size() == n, "run_worker: {} results, {} done flags", n, done.size());
  int fds[2];
  pid_t pid = -1;
  int fork_errno = 0;
  {
    const std::lock_guard<std::mutex> lock(fork_mutex);
    if (pipe(fds) != 0) user_error("tuner: cannot create a pipe to the measurement worker");
    pid = fork();
    if (pid == 0) {
      close(fds[0]);
      worker_main(fds[1], start, done, spec);
    }
    fork_errno = errno;
    close(fds[1]);
  }
  if (pid < 0) {
    close(fds[0]);
    user_error("tuner: cannot fork a measurement worker: {}", std::strerror(fork_errno));
  }
  const int fd = fds[0];
  std::string buf, fatal;
  long current = -1;
  // The worker has timeout_s for each candidate from its "begin", and as long to start.
  auto deadline = Clock::now() + std::chrono::duration<double>(spec.timeout_s);
  bool killed = false;
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    const int rc = left <= 0 ? 0 : poll(&p, 1, static_cast<int>(std::ceil(left * 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      kill(pid, SIGKILL);
      killed = true;
      if (current >= 0 && !done[static_cast<size_t>(current)]) {
        results[static_cast<size_t>(current)].error =
            fmt::format("timeout: no result after {} s", spec.timeout_s);
        done[static_cast<size_t>(current)] = true;
      } else if (current < 0) {
        fatal = fmt::format("the measurement worker did not start within {} s", spec.timeout_s);
      }
      break;
    }
    char chunk[4096];
    const ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the worker is gone: finished, stopped or crashed
    buf.append(chunk, static_cast<size_t>(got));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
      const nlohmann::json j = nlohmann::json::parse(buf.substr(0, nl), nullptr, false);
      buf.erase(0, nl + 1);
      if (j.is_discarded() || !j.is_object()) continue;
      // The worker runs untrusted code: take only well-formed lines about known candidates.
      const auto index = [&](const char* f) -> long {
        if (!j.contains(f) || !j[f].is_number_unsigned()) return -1;
        const auto v = j[f].get<uint64_t>();
        return v < n ? static_cast<long>(v) : -1;
      };
      if (j.contains("fatal") && j["fatal"].is_string()) {
        fatal = j["fatal"].get<std::string>();
      } else if (index("begin") >= 0) {
        current = index("begin");
        deadline = Clock::now() + std::chrono::duration<double>(spec.timeout_s);
      } else if (index("result") >= 0) {
        const auto i = static_cast<size_t>(index("result"));
        MeasureResult& r = results[i];
        try {
          r.error = j.value("error", "");
          r.skipped = j.value("skipped", false);
          if (r.error.empty()) {
            r.times = j.value("times", std::vector<double>{});
            r.median = j.value("median", 0.0);
          }
        } catch (const nlohmann::json::exception&) {
          r = MeasureResult{};
          r.error = "the worker sent a malformed result";
        }
        done[i] = true;
        if (spec.on_result) spec.on_result(i, r);
      }
    }
  }
  close(fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed && current >= 0 && !done[static_cast<size_t>(current)]) {
    // The worker died while running `current`.
    results[static_cast<size_t>(current)].error =
        WIFSIGNALED(status)
            ? fmt::format("crashed: signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))
            : fmt::format("crashed: the worker exited with status {}", WEXITSTATUS(status));
    done[static_cast<size_t>(current)] = true;
  } else if (!killed && current < 0 && fatal.empty() && WIFSIGNALED(status)) {
    fatal = fmt::format("the measurement worker crashed before its first candidate: signal {} ({})",
                        WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  return fatal;
}

std::string run_workers(std::vector<MeasureResult>& results, std::vector<bool>& done,
                        const WorkerSpec& spec, const std::function<bool(size_t)>& may_start) {
  for (size_t start = 0;;) {
    while (start < done.size() && done[start]) ++start;
    if (start == done.size() || !may_start(start)) return "";
    const auto before = std::count(done.begin(), done.end(), true);
    std::string fatal = run_worker(start, results, done, spec);
    if (!fatal.empty()) return fatal;
    if (std::count(done.begin(), done.end(), true) == before) return "";
  }
}

SharedMemory::SharedMemory(size_t bytes) : bytes_(std::max<size_t>(bytes, 64)) {
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) user_error("tuner: cannot map {} bytes of shared memory", bytes_);
  data_ = static_cast<std::byte*>(p);
}

SharedMemory::~SharedMemory() { munmap(data_, bytes_); }

std::vector<Injection> parse_injections(const std::string& spec) {
  std::vector<Injection> out;
  for (const std::string& item : split(spec, ';')) {
    if (item.empty()) continue;
    const auto colon = item.find(':');
    Injection inj;
    const auto at = item.find('@');
    inj.action = item.substr(0, std::min(colon, at));
    if (at < colon) inj.template_name = item.substr(at + 1, colon - at - 1);
    if (colon == std::string::npos ||
        (inj.action != "crash" && inj.action != "hang" && inj.action != "wrong"))
      user_error(
          "YOLOC_TUNE_INJECT '{}': expected ACTION[@TEMPLATE]:KNOB=V,... with ACTION "
          "crash, hang or wrong",
          item);
    const std::vector<std::string> knobs = split(item.substr(colon + 1), ',');
    for (size_t k = 0; k < knobs.size(); ++k) {
      const std::string& kv = knobs[k];
      if (kv.empty() && k + 1 == knobs.size()) break;  // "", or a trailing comma
      const auto eq = kv.find('=');
      try {
        if (eq == std::string::npos) throw std::invalid_argument(kv);
        inj.knobs[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
      } catch (const std::exception&) {
        user_error("YOLOC_TUNE_INJECT '{}': '{}' is not KNOB=INTEGER", item, kv);
      }
    }
    out.push_back(std::move(inj));
  }
  return out;
}

std::string injected_action(const std::vector<Injection>& injections, const std::string& tmpl,
                            const codegen::ScheduleConfig& c) {
  for (const Injection& inj : injections) {
    bool all = !inj.knobs.empty() && (inj.template_name.empty() || inj.template_name == tmpl);
    for (const auto& [k, v] : inj.knobs) {
      const auto it = c.values().find(k);
      all = all && it != c.values().end() && it->second == v;
    }
    if (all) return inj.action;
  }
  return "";
}

void parallel_for_each(size_t n, int jobs, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs && static_cast<size_t>(j) < n; ++j) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

std::string first_lines(const std::string& log, size_t max_chars) {
  return log.size() <= max_chars ? log : log.substr(0, max_chars) + "\n...";
}

}  // namespace yoloc::tuner
