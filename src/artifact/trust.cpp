#include "artifact/trust.h"

#include <cstdlib>

#include "core/error.h"

namespace yoloc::artifact {

std::vector<std::string> trusted_keys(std::vector<std::string> given) {
  for (const std::string& k : given)
    if (k.empty())
      user_error("an empty path was given as a trusted public key; name a .pub file (yoloc "
                 "keygen NAME writes one)");
  const char* env = std::getenv(kTrustedKeysEnv);
  if (!env) return given;
  const std::string list = env;
  size_t named = 0;
  for (size_t begin = 0; begin <= list.size();) {
    size_t end = list.find(':', begin);
    if (end == std::string::npos) end = list.size();
    if (end > begin) {
      given.push_back(list.substr(begin, end - begin));
      ++named;
    }
    begin = end + 1;
  }
  if (named == 0)
    user_error(
        "{} is set but names no public key file; set it to KEY.pub[:OTHER.pub] or unset it",
        kTrustedKeysEnv);
  return given;
}

}  // namespace yoloc::artifact
