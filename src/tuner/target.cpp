#include "tuner/target.h"

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "core/strings.h"

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

TuneTarget cpu_target(codegen::cpu::CpuIsa isa) {
  TuneTarget t;
  t.kind = "cpu";
  t.arch = std::string(codegen::cpu::host_arch()) + "-" + codegen::cpu::isa_name(isa);
  t.device = cpu_model_name();
  return t;
}

TuneTarget host_cpu_target() { return cpu_target(codegen::cpu::detect_host_isa()); }

std::vector<int> parse_device_list(const std::string& devices) {
  const auto fail = [&](const std::string& why) {
    user_error("--devices '{}': {}; expected device numbers such as 0 or 0,1", devices, why);
  };
  if (devices.empty()) fail("no device");
  std::vector<int> out;
  for (const std::string& item : split(devices, ',')) {
    if (item.empty()) fail(fmt::format("item {} is empty", out.size() + 1));
    // Digits only: stoi alone would take " 1", "+1" or "1x".
    const auto digits = [](const std::string& v) {
      return !v.empty() && v.size() <= 9 &&
             std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    if (item[0] == '-' && digits(item.substr(1))) fail(fmt::format("{} is negative", item));
    if (!digits(item)) fail(fmt::format("'{}' is not a device number", item));
    const int id = std::stoi(item);
    if (std::find(out.begin(), out.end(), id) != out.end())
      fail(fmt::format("device {} is listed twice", id));
    out.push_back(id);
  }
  return out;
}

TuneTarget resolve_target(const std::string& name, int device_id, codegen::cpu::CpuIsa isa) {
  if (name == "cpu") {
    if (device_id != 0) user_error("--devices {}: the cpu target is one device (0)", device_id);
    if (!codegen::cpu::host_can_run(isa))
      user_error("--isa {}: this machine cannot run {} kernels, so it cannot time them",
                 codegen::cpu::isa_name(isa), codegen::cpu::isa_name(isa));
    return cpu_target(isa);
  }
  user_error("--target {}: this build tunes for 'cpu' only", name);
}

}  // namespace yoloc::tuner
