#pragma once
/// The trust policy of everything that loads artifacts (the yoloc commands, the C and C++
/// APIs): the public keys given explicitly plus those the environment variable
/// YOLOC_TRUSTED_KEYS names (a ':'-separated list of .pub files). With any key, only artifacts
/// signed by one of them load (artifact_reader.h); the variable can add keys, never remove them.
#include <string>
#include <vector>

namespace yoloc::artifact {

/// The name of the environment variable.
inline constexpr const char* kTrustedKeysEnv = "YOLOC_TRUSTED_KEYS";

/// `given` followed by the files YOLOC_TRUSTED_KEYS names. Raises a UserError for an empty
/// entry of `given`, and for a variable that is set but names no file (a policy that was meant
/// and got lost must not turn into "trust everything").
std::vector<std::string> trusted_keys(std::vector<std::string> given);

}  // namespace yoloc::artifact
