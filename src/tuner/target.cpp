#include "tuner/target.h"

#include <fstream>

#include "core/error.h"

namespace yoloc::tuner {
namespace {

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    // x86: "model name : ..."; aarch64 kernels have no model name, only "CPU part".
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    const auto b = v.find_first_not_of(" \t");
    const auto e = v.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : v.substr(b, e - b + 1);
  }
  return "unknown";
}

std::string cpu_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "x86_64-avx512";
  if (__builtin_cpu_supports("avx2")) return "x86_64-avx2";
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

}  // namespace

std::string TuneTarget::str() const { return kind + "/" + arch + "/" + device; }

nlohmann::json target_to_json(const TuneTarget& t) {
  return {{"kind", t.kind}, {"arch", t.arch}, {"device", t.device}, {"device_id", t.device_id}};
}

TuneTarget target_from_json(const nlohmann::json& j) {
  TuneTarget t;
  for (const char* f : {"kind", "arch", "device"}) {
    if (!j.contains(f) || !j[f].is_string()) user_error("target without a string '{}'", f);
  }
  t.kind = j["kind"].get<std::string>();
  t.arch = j["arch"].get<std::string>();
  t.device = j["device"].get<std::string>();
  t.device_id = j.value("device_id", 0);
  return t;
}

TuneTarget host_cpu_target() {
  TuneTarget t;
  t.kind = "cpu";
  t.arch = cpu_isa();
  t.device = cpu_model_name();
  return t;
}

TuneTarget resolve_target(const std::string& name, int device_id) {
  if (name == "cpu") {
    if (device_id != 0) user_error("--devices {}: the cpu target is one device (0)", device_id);
    return host_cpu_target();
  }
  user_error("--target {}: this build tunes for 'cpu' only", name);
}

}  // namespace yoloc::tuner
