#include "tuner/wire.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cmath>

namespace yoloc::tuner {

std::string_view ByteReader::take(uint64_t n) {
  if (n > in_.size() - pos_) throw MalformedMessage("a message ends early");
  const std::string_view s = in_.substr(pos_, n);
  pos_ += n;
  return s;
}

std::vector<double> ByteReader::doubles() {
  const uint64_t n = u64();
  if (n > (in_.size() - pos_) / sizeof(double)) throw MalformedMessage("a message ends early");
  std::vector<double> v(n);
  const std::string_view s = take(n * sizeof(double));
  if (n > 0) std::memcpy(v.data(), s.data(), s.size());
  return v;
}

bool write_frame(int fd, std::string_view message, WireClock::time_point deadline) {
  const uint64_t n = message.size();
  std::string head(reinterpret_cast<const char*>(&n), sizeof n);
  for (std::string_view part : {std::string_view(head), message}) {
    while (!part.empty()) {
      const ssize_t w = ::send(fd, part.data(), part.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        part.remove_prefix(static_cast<size_t>(w));
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
      // Full: wait for the peer to read, as long as the deadline allows.
      const double left = std::chrono::duration<double>(deadline - WireClock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd, POLLOUT, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(std::ceil(left * 1000)));
      if (rc < 0 && errno != EINTR) return false;
      if (rc > 0 && (p.revents & (POLLERR | POLLHUP))) return false;
    }
  }
  return true;
}

namespace {

/// Reads exactly n bytes (blocking); false at the end of the stream or on an error.
bool read_exactly(int fd, char* out, size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, out, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    out += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

bool read_frame(int fd, std::string& message, uint64_t max_bytes) {
  uint64_t n = 0;
  if (!read_exactly(fd, reinterpret_cast<char*>(&n), sizeof n) || n > max_bytes) return false;
  message.resize(n);
  return read_exactly(fd, message.data(), n);
}

bool FrameReader::next(std::string& message) {
  uint64_t n = 0;
  if (buf_.size() < sizeof n) return false;
  std::memcpy(&n, buf_.data(), sizeof n);
  if (n > max_) throw MalformedMessage("a frame longer than its limit");
  if (buf_.size() - sizeof n < n) return false;
  message.assign(buf_, sizeof n, n);
  buf_.erase(0, sizeof n + n);
  return true;
}

}  // namespace yoloc::tuner
