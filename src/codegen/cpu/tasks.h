#pragma once
/// Task extraction for the CPU target: every kernel group of an optimized graph becomes a
/// CpuTask, the one interface the compiler driver (cpu_compiler.h) and the auto-tuner use. A task
/// knows its template, its workload key (identical workloads, within or across models, have the
/// same key and share tuning records), its search space, and how to lower itself for a config:
/// the kernel source plus the arguments the kernel takes, in its ABI's order.
///
/// Batch: conv, depthwise conv, pooling and resize kernels are specialised for one image
/// (n = 1); the driver runs them over the batch through a wrapper that offsets every argument by
/// its batch stride, so a task's key does not depend on the batch size and views whose images
/// lie apart (channel slices of a concat at batch > 1) need no special kernel. Elementwise and
/// detect-tail kernels cover the whole batch and need dense arguments.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/schedule.h"
#include "ir/graph.h"

namespace yoloc::codegen::cpu {

/// The calling convention of a generated kernel (before the runtime ABI wrapper).
enum class KernelAbi {
  /// symbol(const float* in, const float* w, const float* bias, const float* res, float* out,
  ///        int64_t begin, int64_t end): ConvTemplate, DwConvTemplate.
  kConv,
  /// symbol(const float* const* in, float* const* out, int64_t begin, int64_t end): the
  /// IR-driven templates (emit_util.h).
  kArrays,
};

/// One argument of a lowered kernel.
struct KernelArg {
  enum class Kind {
    kActivation,  ///< a value of the graph (arena or graph input)
    kConstant,    ///< float32 data the compiler stores with the weights (packed for the config)
    kNull,        ///< no argument (the conv ABI's residual when there is none)
  };
  Kind kind = Kind::kNull;
  const Value* value = nullptr;  ///< kActivation
  std::vector<float> data;       ///< kConstant
  bool output = false;           ///< written by the kernel
  /// Bytes the kernel touches for one run over its batch (one image for per-image tasks):
  /// what an isolated measurement allocates.
  uint64_t bytes = 0;
};

/// A lowered kernel: its source (one extern "C" function named by the symbol given) and its
/// arguments. For KernelAbi::kConv the arguments are in, w, bias, res, out; for kArrays the
/// inputs (in order) and then the outputs (output = true).
struct LoweredKernel {
  CpuKernel kernel;
  KernelAbi abi = KernelAbi::kArrays;
  std::vector<KernelArg> args;
};

/// One tuning / compilation unit: a kernel group of the graph and the template that serves it.
struct CpuTask {
  int group = -1;             ///< FusedGroup::id
  std::string group_name;     ///< FusedGroup::name, e.g. "Conv+SiLU"
  std::string template_name;  ///< "conv", "dwconv", "pool", "resize", "elementwise", "tail"
  std::string key;            ///< workload key (template + shapes + layout + epilogue)
  double flops = 0;           ///< of one run (all images)
  int64_t batch = 1;  ///< images the driver loops the kernel over (1 for whole-batch tasks)
  ScheduleSpace space;
  ScheduleConfig default_config;
  std::function<bool(const ScheduleConfig&)> valid;
  /// The kernel for a valid config, its function named `symbol`.
  std::function<LoweredKernel(const ScheduleConfig&, const std::string& symbol)> lower;
};

/// A fused conv group's operands: input, weights and bias constants, residual, output.
struct ConvOperands {
  const Value* x = nullptr;
  const Value* w = nullptr;
  const Value* bias = nullptr;
  const Value* res = nullptr;
  const Value* y = nullptr;
};
/// The operands of a conv group of the form conv_task_from_group takes (weights and bias
/// constant, the residual an activation, one output); nullopt otherwise.
std::optional<ConvOperands> conv_operands(const Graph& g, const FusedGroup& grp);

/// The tasks of every kernel group of `g` (after optimize() for target "cpu"), in the order they
/// run, with kernels generated for `isa`. Raises a UserError naming the group and its ops when
/// no CPU template takes a group.
std::vector<CpuTask> extract_cpu_tasks(const Graph& g, CpuIsa isa = detect_host_isa());

}  // namespace yoloc::codegen::cpu
