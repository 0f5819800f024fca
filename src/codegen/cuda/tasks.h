#pragma once
/// Task extraction for the CUDA target: every kernel group of an optimized graph (target "cuda")
/// becomes a CudaTask, the one interface the compiler driver (cuda_compiler.h) and the tuner use.
/// Convolutions writing channels-last activations go to the direct template when they have at
/// most 4 input channels (the first conv, also reading any dense NCHW float32 input), else to the
/// tensor-core template (fp16 / bf16 storage; it also reads the NCHW float32 image) or the SIMT
/// template (fp32), which also write NCHW (the detect head's last convs); stride-1 same-size
/// MaxPools over one NHWC input with their view Concats (SPPF) to the SPPF template; the DFL
/// detect tail of YOLOv8 / YOLO11 heads to the detect-tail template; every other group (other
/// detect tails, resize, depthwise convs, elementwise chains, other convs that read NCHW, pools
/// the SPPF template does not take) to the generic template.
///
/// A conv whose output a nearest Resize of integer scales reads (upsample_consumer) writes the
/// Resize's output too, as its upsampled copy (CudaConvTask::up): the Resize's group gets no task
/// (CudaTask::absorbed).
///
/// A task lowers to one CUDA source with one or more launches that all take the same parameter
/// list (CudaLowered::args): the conv templates' (x, w, bias, res, y, up; a b2b pair appends
/// its second weights and bias, w2 and bias2), the SPPF template's
/// (x, outputs...), the detect-tail template's (inputs..., table, output), or the generic
/// template's (inputs..., constants..., outputs..., scratch).
#include <functional>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/generic_template.h"
#include "codegen/memory_plan.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

/// One kernel parameter of a task (a device pointer).
struct CudaArg {
  enum class Kind {
    kActivation,  ///< a value of the graph in the arena (or a graph input)
    kConstant,    ///< bytes the compiler stores with the weights
    kScratch,     ///< the task's scratch memory (CudaLowered::scratch_bytes)
    kNull,        ///< a null pointer (a conv without residual)
  };
  Kind kind = Kind::kNull;
  const Value* value = nullptr;  ///< kActivation
  /// kActivation: the pointer is this many elements before the value's first element (a conv
  /// kernel takes the start of the buffer a channel slice lies in and adds the offset itself).
  int64_t element_offset = 0;
  std::string data;  ///< kConstant
  bool output = false;
};

/// A lowered task: its source, its launches (in order; CudaKernel::source empty) and their
/// common parameters.
struct CudaLowered {
  std::string source;
  std::vector<CudaKernel> launches;
  std::vector<CudaArg> args;
  uint64_t scratch_bytes = 0;
};

struct CudaTask {
  int group = -1;
  /// A fused pair of convs (a back-to-back pair of tc_conv, CudaConvTask::b2b, or a stem pair,
  /// stem_pair_template.h): the second group, whose conv alone consumes `group`'s output; the
  /// task runs in its place, and the intermediate (`group`'s output) is never stored. -1
  /// otherwise.
  int second_group = -1;
  std::string group_name;     ///< FusedGroup::name ("first+second" for a pair)
  std::string template_name;  ///< "direct_conv", "tc_conv", "simt_conv", "dw_conv", "stem_pair",
                              ///< "sppf", "detect_tail", "generic"
  std::string key;            ///< workload key
  double flops = 0;
  ScheduleSpace space;
  ScheduleConfig default_config;
  std::function<bool(const ScheduleConfig&)> valid;
  /// The kernels for a valid config, their symbols starting with `prefix` (a C identifier).
  std::function<CudaLowered(const ScheduleConfig&, const std::string& prefix)> lower;
  /// The kernel groups this task computes besides its own (a Resize written as a conv's
  /// upsampled copy): they have no task, and their values are written when this task runs.
  std::vector<int> absorbed;
};

/// How kernels address the stored value v from a pointer to its first element: NHWC and NCHW
/// values through their channel slice (concat / split views), other ranks dense row-major.
/// Raises a UserError for a view of another form.
CudaOperand cuda_operand_of(const Graph& g, const Value* v);

/// Back-to-back fusion (tasks of two groups in one tensor-core kernel) applies to a conv group
/// whose output is read by nothing but a 1x1 stride-1 conv group without residual (groups of 1,
/// both for the tensor-core template, the output dense NHWC and no graph output), at batch <= 2
/// and from kB2bMinPixels to kB2bMaxPixels output pixels (N*OH*OW): at large batch and on large
/// maps the unfused kernels are better, as each pair's tile then runs one column of blocks; on
/// small maps the pair's few blocks (one column of tiles, no split-K) lose to the two kernels
/// (yolov8n at batch 1 on an H200, default configs: at 80x80 the pairs took 14.0, 16.3 and
/// 20.2 us against 15.1, 17.6 and 24.9 us for the two kernels, at 40x40 and 20x20 12.7-15.0 us
/// against 9.6-14.8 us; bench/results/2026-12-01-h200-gpu-tests.json).
inline constexpr int64_t kB2bMaxBatch = 2;
inline constexpr int64_t kB2bMinPixels = 80 * 80;
inline constexpr int64_t kB2bMaxPixels = 2 * 80 * 80;

/// The tasks of every kernel group of `g` but those another task absorbs (CudaTask::absorbed)
/// (optimize()d for target "cuda", static shapes) in the
/// order they run, for a target of compute capability `sm` (as in sm_XX: the features the
/// templates may use; the default, 80, is every target's); with `stem_pairs`, a conv of the image
/// and the conv that alone reads its output as one stem-pair task (CudaTask::second_group) where
/// StemPairTemplate takes them; with `b2b`, the pairs back-to-back fusion takes as one task each,
/// those of at least `b2b_min_pixels` output pixels; a pair runs in its second group's place.
/// Raises a UserError naming the group and its ops when no template takes it.
std::vector<CudaTask> extract_cuda_tasks(const Graph& g, int sm = 80, bool b2b = false,
                                         int64_t b2b_min_pixels = kB2bMinPixels,
                                         bool stem_pairs = false);

/// The groups each task of `tasks` runs besides its own, for plan_memory: a pair's two (its
/// intermediate never stored), a conv's and the Resizes it writes the output of.
std::vector<MergedGroups> merged_groups(const std::vector<CudaTask>& tasks);

}  // namespace yoloc::codegen::cuda
