#pragma once
/// The byte format of the messages between the tuner and its measurement workers (a parent and
/// its forked child, so one binary on one machine: numbers in the machine's own byte order),
/// and the framing of those messages on a stream socket.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace yoloc::tuner {

/// A message that ends early or holds an impossible length (the worker runs untrusted code: its
/// replies are checked).
class MalformedMessage : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Builds a message: fixed-width numbers and length-prefixed byte strings.
class ByteWriter {
 public:
  void u8(uint8_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void bytes(std::string_view v) {
    u64(v.size());
    raw(v.data(), v.size());
  }
  void doubles(const std::vector<double>& v) {
    u64(v.size());
    raw(v.data(), v.size() * sizeof(double));
  }
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

/// Reads a message ByteWriter built, in the same order; raises MalformedMessage past its end.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  uint8_t u8() { return pod<uint8_t>(); }
  uint64_t u64() { return pod<uint64_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  double f64() { return pod<double>(); }
  bool boolean() { return u8() != 0; }
  std::string_view bytes() { return take(u64()); }
  std::vector<double> doubles();
  /// True when every byte was read.
  bool done() const { return pos_ == in_.size(); }

 private:
  template <class T>
  T pod() {
    T v;
    const std::string_view s = take(sizeof v);
    std::memcpy(&v, s.data(), sizeof v);
    return v;
  }
  std::string_view take(uint64_t n);
  std::string_view in_;
  size_t pos_ = 0;
};

using WireClock = std::chrono::steady_clock;

/// Writes `message` to the stream socket `fd` as one frame (its length, then its bytes), waiting
/// for room until `deadline`. False when the peer is gone or the deadline passed (never raises
/// SIGPIPE).
bool write_frame(int fd, std::string_view message, WireClock::time_point deadline);

/// Blocks until a whole frame has arrived on `fd` and returns it in `message`; false at the end
/// of the stream (or an error, or a frame longer than `max_bytes`). For the worker's side, which
/// waits as long as its parent lets it.
bool read_frame(int fd, std::string& message, uint64_t max_bytes);

/// Collects frames from bytes read piecewise (the parent's side, which polls with deadlines).
class FrameReader {
 public:
  explicit FrameReader(uint64_t max_bytes) : max_(max_bytes) {}
  void append(const char* data, size_t n) { buf_.append(data, n); }
  /// Moves the next whole frame into `message`; false when none is complete yet. Raises
  /// MalformedMessage for a frame longer than max_bytes.
  bool next(std::string& message);

 private:
  uint64_t max_;
  std::string buf_;
};

}  // namespace yoloc::tuner
