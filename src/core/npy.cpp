#include "core/npy.h"
#include "core/error.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <regex>

namespace yoloc {

namespace {

DType dtype_from_descr(const std::string& d, const std::string& path) {
  if (d.size() < 3) user_error("{}: unsupported .npy dtype '{}'", path, d);
  if (d[0] == '>' && d.substr(1) != "i1" && d.substr(1) != "u1" && d.substr(1) != "b1")
    user_error("{}: big-endian .npy data ('{}') is not supported; save with a little-endian dtype",
               path, d);
  const std::string t = d.substr(1);
  if (t == "f4") return DType::kFloat32;
  if (t == "f2") return DType::kFloat16;
  if (t == "f8") return DType::kFloat64;
  if (t == "i1") return DType::kInt8;
  if (t == "u1") return DType::kUInt8;
  if (t == "i2") return DType::kInt16;
  if (t == "u2") return DType::kUInt16;
  if (t == "i4") return DType::kInt32;
  if (t == "u4") return DType::kUInt32;
  if (t == "i8") return DType::kInt64;
  if (t == "u8") return DType::kUInt64;
  if (t == "b1") return DType::kBool;
  user_error("{}: unsupported .npy dtype '{}' (expected a numeric or bool dtype)", path, d);
}

std::string descr_of(DType t) {
  switch (t) {
    case DType::kFloat32: return "<f4";
    case DType::kFloat16: return "<f2";
    case DType::kFloat64: return "<f8";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt16: return "<i2";
    case DType::kUInt16: return "<u2";
    case DType::kInt32: return "<i4";
    case DType::kUInt32: return "<u4";
    case DType::kInt64: return "<i8";
    case DType::kUInt64: return "<u8";
    case DType::kBool: return "|b1";
    default: break;
  }
  user_error(".npy cannot hold {} tensors; cast to float32 first", dtype_name(t));
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("cannot open '{}': no such file or not readable", path);
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    user_error("'{}' is not a .npy file (bad magic); save arrays with numpy.save", path);
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) user_error("'{}': truncated .npy header", path);
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) user_error("'{}': truncated .npy header", path);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    user_error("'{}': unsupported .npy version {}", path, major);
  }
  if (hlen > (1u << 20)) user_error("'{}': .npy header too large", path);
  std::string header(hlen, '\0');
  if (!f.read(header.data(), hlen)) user_error("'{}': truncated .npy header", path);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
    user_error("'{}': .npy header has no descr", path);
  const DType dt = dtype_from_descr(m[1], path);
  if (std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*True")))
    user_error("'{}': Fortran-order .npy arrays are not supported; save a C-contiguous array",
               path);
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    user_error("'{}': .npy header has no shape", path);
  Shape shape;
  const std::string dims = m[1];
  std::regex num("\\d+");
  // The data must be in the file before anything is allocated for it: a header may declare
  // any shape.
  const std::streampos data_start = f.tellg();
  f.seekg(0, std::ios::end);
  const uint64_t available = static_cast<uint64_t>(f.tellg() - data_start);
  f.seekg(data_start);
  uint64_t bytes = dtype_size(dt);
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator();
       ++it) {
    const std::string digits = it->str();
    const uint64_t d = digits.size() > 15 ? UINT64_MAX : std::stoull(digits);
    if (d > (uint64_t{1} << 48) || (d > 0 && bytes > available / d))
      user_error("'{}': truncated .npy data: the shape ({}) needs more than the {} bytes the "
                 "file holds", path, dims, available);
    bytes *= d;
    shape.push_back(static_cast<int64_t>(d));
  }
  if (bytes > available)
    user_error("'{}': truncated .npy data (expected {} bytes, the file holds {})", path, bytes,
               available);
  Tensor t(dt, shape);
  if (t.nbytes() && !f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes())))
    user_error("'{}': truncated .npy data (expected {} bytes for {})", path, t.nbytes(),
               describe(t));
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string shape = fmt::format("{}", fmt::join(t.shape(), ", "));
  if (t.shape().size() == 1) shape += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                   descr_of(t.dtype()), shape);
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  if (!f) user_error("cannot write '{}': check that the folder exists and is writable", path);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t hl = static_cast<uint16_t>(header.size());
  const char lb[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
  f.write(lb, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!f) user_error("failed writing '{}' (disk full?)", path);
}

}  // namespace yoloc
