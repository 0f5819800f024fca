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
/// (CudaTask::absorbed). Above kUpsampleMaxBatch the Resize goes into its reader instead, where
/// that is a 1x1 conv of the concat it writes into (upsampled_input): the conv reads the Resize's
/// source (CudaConvTask::up_in), and that part of the concat is never stored.
///
/// A task lowers to one CUDA source with one or more launches that all take the same parameter
/// list (CudaLowered::args): the conv templates' (x, w, bias, res, y, up; a b2b pair appends
/// its second weights and bias, w2 and bias2), the SPPF template's
/// (x, outputs...), the detect-tail template's (inputs..., table, output), or the generic
/// template's (inputs..., constants..., outputs..., scratch).
#include <functional>
#include <map>
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
  /// upsampled copy, or read as its upsampled input): they have no task, and their values are
  /// written (or stand for what is read) when this task runs.
  std::vector<int> absorbed;
  /// A conv storing the detector's class scores or boxes (CudaConvTask::scores, boxes): the
  /// workload key of the same conv storing its own output; a conv with an upsampled input
  /// (CudaConvTask::up_in): that of the same conv reading its whole input. It takes the twin's
  /// tuned config without records of its own (the main loop, which the config shapes, is the
  /// same; twin_config).
  std::string twin_key;
  /// A conv storing the class scores or boxes: its own output, which it no longer stores, and
  /// the detector's output it writes into instead (plan_memory's Redirect).
  const Value* redirected_from = nullptr;
  const Value* redirected_into = nullptr;
};

/// How kernels address the stored value v from a pointer to its first element: NHWC and NCHW
/// values through their channel slice (concat / split views), other ranks dense row-major.
/// Raises a UserError for a view of another form.
CudaOperand cuda_operand_of(const Graph& g, const Value* v);

/// Which back-to-back pairs extract_cuda_tasks fuses (tasks of two groups in one tensor-core
/// kernel: a conv group whose output is read by nothing but a 1x1 stride-1 conv group without
/// residual, groups of 1, both for the tensor-core template, the first's output dense NHWC and no
/// graph output). Whether a pair beats its two kernels depends on the batch and the map: on an
/// H200, yolov8n fp16 at batch 1 ran 0.267 ms with its 8 pairs fused and 0.264 ms without (the
/// 40x40 and 20x20 pairs, without split-K, lost what the saved launches gain; the 80x80 ones
/// neither won nor lost), while at batch 128, tuned, all 9 pairs won: 6.53 ms against 6.82 ms
/// (bench/results/2026-12-01-h200-b2b.json). So by default a pair is fused where the tuning
/// records say so, by a margin: timed alone (the tuner's measurements), each kernel pays a whole
/// launch, which a pair saves, while in the network's CUDA graph with programmatic launches a
/// kernel boundary costs much less. At batch 1 the 5 pairs that beat their two convs alone by
/// 0.6-2.5 us made the network slower (0.231 ms against 0.228 ms); at batch 128 the pairs gained
/// 5-108 us each, bar one of 2 us.
struct B2bPolicy {
  enum class Mode {
    kOff,       ///< no pair
    kAll,       ///< every pair the template takes (tuning extracts them all)
    kMeasured,  ///< the pairs measured faster than their two kernels (`seconds`)
  };
  Mode mode = Mode::kOff;
  /// kMeasured: the best measured time of one run (seconds) by workload key, at the compile's
  /// batch (tuning records). A pair is fused when its key and both its convs' keys have a time
  /// and the pair's is below the sum of the two by more than `margin_s`.
  std::map<std::string, double> seconds;
  double margin_s = 3e-6;

  static B2bPolicy all() { return {Mode::kAll, {}}; }
};

/// The tasks of every kernel group of `g` but those another task absorbs (CudaTask::absorbed)
/// (optimize()d for target "cuda", static shapes) in the
/// order they run, for a target of compute capability `sm` (as in sm_XX: the features the
/// templates may use; the default, 80, is every target's); with `stem_pairs`, a conv of the image
/// and the conv that alone reads its output as one stem-pair task (CudaTask::second_group) where
/// StemPairTemplate takes them; the back-to-back pairs `b2b` chooses as one task each. A pair
/// runs in its second group's place. Where the class scores of a DFL detect tail come from
/// tensor-core head convs that only the tail reads, those convs store the scores (sigmoid) straight
/// into the detector's output and the tail decodes only the boxes (CudaConvTask::scores): on an
/// H200 at batch 128 the tail's class units read and wrote every score once more. Where then also
/// every level's box logits come from a chosen b2b pair that only the tail reads, those pairs
/// decode the boxes into the output (CudaConvTask::boxes) and the tail has no task. Raises a
/// UserError naming the group and its ops when no template takes it.
std::vector<CudaTask> extract_cuda_tasks(const Graph& g, int sm = 80, const B2bPolicy& b2b = {},
                                         bool stem_pairs = false);

/// The groups each task of `tasks` runs besides its own, for plan_memory: a pair's two (its
/// intermediate never stored), a conv's and the Resizes it writes the output of.
std::vector<MergedGroups> merged_groups(const std::vector<CudaTask>& tasks);

/// The outputs the tasks of `tasks` write into later values, for plan_memory: the class scores.
std::vector<Redirect> redirects(const std::vector<CudaTask>& tasks);

}  // namespace yoloc::codegen::cuda
