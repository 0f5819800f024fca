#include <fmt/format.h>

#include <map>

#include "core/error.h"
#include "targets/target.h"

namespace yoloc::targets {
namespace {

std::map<std::string, std::unique_ptr<Target>>& registry() {
  static std::map<std::string, std::unique_ptr<Target>> targets;
  return targets;
}

}  // namespace

void register_target(std::unique_ptr<Target> target) {
  const std::string name = target->name();
  const bool added = registry().emplace(name, std::move(target)).second;
  YOLOC_CHECK(added, "the target '{}' is registered twice", name);
}

const Target& find_target(const std::string& name) {
  const auto it = registry().find(name);
  if (it == registry().end())
    user_error("--target {}: this yoloc compiles for {} (a target of a toolkit that was not found "
               "when yoloc was built, such as cuda without NVRTC, is left out)",
               name, fmt::join(target_names(), ", "));
  return *it->second;
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& [name, target] : registry()) names.push_back(name);
  return names;
}

TargetAttributes attributes(const std::string& spec) {
  if (spec == "reference") return {};
  if (registry().contains(spec)) return find_target(spec).attributes();
  const size_t dash = spec.find('-');
  if (dash == std::string::npos || !registry().contains(spec.substr(0, dash)))
    user_error("target '{}': choose reference, one of {} or a variant such as cpu-avx2", spec,
               fmt::join(target_names(), ", "));
  return find_target(spec.substr(0, dash)).attributes(spec.substr(dash + 1));
}

}  // namespace yoloc::targets
