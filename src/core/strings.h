#pragma once
/// Small string helpers shared by option and spec parsers.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace yoloc {

/// The fields of `s` between the separators `sep`, empty ones included ("a,,b" -> {"a", "", "b"};
/// "" -> {""}).
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (size_t pos = 0;;) {
    const size_t end = std::min(s.find(sep, pos), s.size());
    out.emplace_back(s.substr(pos, end - pos));
    if (end == s.size()) return out;
    pos = end + 1;
  }
}

}  // namespace yoloc
