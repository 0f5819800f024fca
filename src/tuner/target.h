#pragma once
/// What a measurement ran on. Records carry it so that a schedule tuned on one machine is only
/// applied where it was measured: the target kind ("cpu"; a CUDA target adds "cuda"), the
/// instruction set or compute capability the kernels were built for, the device model and, on
/// hosts with several devices, the device id (records of the same model are interchangeable, so
/// the id does not take part in matching).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/cpu/isa.h"

namespace yoloc::tuner {

struct TuneTarget {
  std::string kind = "cpu";  ///< "cpu" (this build); "cuda" for a GPU target
  std::string arch;          ///< cpu: machine and kernel ISA, "x86_64-avx512"; cuda: "sm_90"
  std::string device;        ///< the device model, e.g. "Intel(R) Xeon(R) Processor"
  int device_id = 0;         ///< which device of the host measured

  /// "kind/arch/device", e.g. "cpu/x86_64-avx512/Intel(R) Xeon(R) Processor".
  std::string str() const;
  /// True when records measured on `o` apply here: same kind, arch and device model.
  bool same_hardware(const TuneTarget& o) const {
    return kind == o.kind && arch == o.arch && device == o.device;
  }
  bool operator==(const TuneTarget&) const = default;
};

nlohmann::json target_to_json(const TuneTarget& t);
/// Raises a UserError naming the missing field.
TuneTarget target_from_json(const nlohmann::json& j);

/// This machine's CPU running kernels generated for `isa`: arch "<machine>-<isa>" (e.g.
/// "x86_64-avx512") and the model name from /proc/cpuinfo.
TuneTarget cpu_target(codegen::cpu::CpuIsa isa);
/// cpu_target of the best ISA this machine runs (what compile generates by default).
TuneTarget host_cpu_target();

/// The device numbers of a `--devices` option: "0" or a comma list "0,1" (non-negative, no
/// duplicates, in the order given). Raises a UserError for an empty item, garbage, a negative
/// number or a duplicate.
std::vector<int> parse_device_list(const std::string& devices);

/// The target a `--target NAME` option names on this host (device `device_id`; kernels for
/// `isa`). Raises a UserError for a target this build cannot measure.
TuneTarget resolve_target(const std::string& name, int device_id, codegen::cpu::CpuIsa isa);

}  // namespace yoloc::tuner
