// yoloc devices [--json FILE|-]: the devices this build of yoloc can compile for and run on: the
// CPU (its model and the vector ISA its kernels use), then each GPU kind this build supports
// (device_list.h), each device with the index --device takes, or why the kind is not there.
#include <fmt/format.h>

#include <fstream>
#include <thread>

#include "codegen/cpu/isa.h"
#include "core/error.h"
#include "tools/commands.h"
#include "tools/device_list.h"

namespace yoloc::tools {

namespace {

std::vector<DeviceLister>& listers() {
  static std::vector<DeviceLister> l;
  return l;
}

DeviceKind cpu_kind() {
  const codegen::cpu::CpuIsa isa = codegen::cpu::detect_host_isa();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::string name = cpu_model();
  DeviceKind k{"cpu", {}, {}};
  k.devices.push_back(
      {"",
       fmt::format("{}, {} hardware threads, kernels for {}", name, threads,
                   codegen::cpu::isa_name(isa)),
       {{"name", name}, {"threads", threads}, {"isa", codegen::cpu::isa_name(isa)}}});
  return k;
}

void run_devices(const std::string& json) {
  keep_stdout_for_json(json);
  std::vector<DeviceKind> kinds = {cpu_kind()};
  for (const DeviceLister& l : listers()) kinds.push_back(l());
  nlohmann::json out = nlohmann::json::array();
  for (const DeviceKind& k : kinds) {
    nlohmann::json devices = nlohmann::json::array();
    if (!k.unavailable.empty()) fmt::print("{:<7} none: {}\n", k.target, k.unavailable);
    for (const DeviceKind::Device& d : k.devices) {
      fmt::print("{:<7} {:<13} {}\n", k.target, d.id.empty() ? "" : "--device " + d.id,
                 d.description);
      nlohmann::json j = d.facts;
      if (!d.id.empty()) j["device"] = d.id;
      j["description"] = d.description;
      devices.push_back(j);
    }
    if (k.unavailable.empty() && k.devices.empty()) fmt::print("{:<7} none found\n", k.target);
    out.push_back({{"target", k.target}, {"devices", devices}});
    if (!k.unavailable.empty()) out.back()["unavailable"] = k.unavailable;
  }
  if (!json.empty()) write_json(json, out, "--json");
}

}  // namespace

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(std::min(line.find(':') + 2, line.size()));
  return "unknown CPU";
}

void register_device_lister(DeviceLister lister) { listers().push_back(std::move(lister)); }
const std::vector<DeviceLister>& device_listers() { return listers(); }

void add_devices(CLI::App& app) {
  auto json = std::make_shared<std::string>();
  auto* c = app.add_subcommand(
      "devices", "List the devices this yoloc can compile for and run on (CPU, CUDA, OpenCL)");
  c->add_option("--json", *json,
                "also write the list to FILE, or to stdout with '-' (the text then goes to stderr)");
  c->callback([json] { run_devices(*json); });
}

}  // namespace yoloc::tools
