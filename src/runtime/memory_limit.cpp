#include "runtime/memory_limit.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace yoloc::runtime {

uint64_t default_max_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{1} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2;
}

uint64_t parse_memory_size(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  double scale = 1;
  if (end && *end) {
    const std::string unit = end;
    if (unit == "K" || unit == "k") scale = 1024.0;
    else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
    else end = nullptr;
  }
  const double bytes = v * scale;
  if (!end || !std::isfinite(bytes) || bytes < 1 || bytes > 1e18)
    user_error("{} '{}' is not a memory size: give bytes or a number with K, M or G (e.g. 2G)",
               option, text);
  return static_cast<uint64_t>(bytes);
}

void check_arena_size(uint64_t bytes, uint64_t max, const std::string& where) {
  const uint64_t cap = max > 0 ? max : default_max_memory();
  if (bytes > cap)
    user_error(
        "artifact '{}' asks for a {:.1f} MB arena, more than the {:.1f} MB memory cap; give "
        "a larger --max-memory if the model really needs it (default: half of this machine's "
        "memory)",
        where, static_cast<double>(bytes) / 1e6, static_cast<double>(cap) / 1e6);
}

}  // namespace yoloc::runtime
