#pragma once
/// The CPU kernel template of nearest-neighbour Resize (the YOLO upsample): a row copy per
/// output row through source-index tables computed at compile time from the op's coordinate
/// transformation and nearest mode, so every mode ONNX defines costs the same.
///
/// IR-driven ABI (emit_util.h): in = {x}, out = {y}. Activations are NCHW16c (lanes 16) or plain
/// NCHW (lanes 1). When the consumer is a view Concat, `out` points at the resize's channel
/// slice of the concat buffer and consecutive images lie out_batch_stride floats apart.
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/schedule.h"

namespace yoloc::codegen::cpu {

/// The workload of one nearest Resize.
struct ResizeTask {
  int64_t n = 1, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t lanes = kBlock;        ///< 16: NCHW16c; 1: plain NCHW
  int64_t out_batch_stride = 0;  ///< floats between images of y (c * oh * ow when dense)
  std::vector<int64_t> rows;     ///< source row of each output row
  std::vector<int64_t> cols;     ///< source column of each output column

  /// e.g. "resize_nearest_f32 n1 c256 20x20->40x40 nchw16c bs409600".
  std::string key() const;
};

/// Source indices of nearest Resize along one axis (ONNX coordinate_transformation_mode and
/// nearest_mode), clamped to [0, in); nullopt for an unknown mode.
std::optional<std::vector<int64_t>> nearest_indices(int64_t in, int64_t out, double scale,
                                                    const std::string& coord_mode,
                                                    const std::string& nearest_mode);

/// The task of an anchor group of one 4-D nearest Resize that keeps N and C (no epilogue);
/// nullopt for other forms.
std::optional<ResizeTask> resize_task_from_group(const Graph& g, const FusedGroup& group);

/// The resize template. Knob "unroll": unroll of the output-column loop. Work items are output
/// rows of one channel block.
class ResizeTemplate {
 public:
  static bool matches(const ResizeTask& t);
  static ScheduleSpace space(const ResizeTask& t);
  static bool valid(const ResizeTask& t, const ScheduleConfig& cfg);
  static ScheduleConfig default_config(const ResizeTask& t);
  /// Raises InternalError when the task does not match or cfg is not valid.
  static CpuKernel emit(const ResizeTask& t, const ScheduleConfig& cfg, const std::string& symbol);
};

}  // namespace yoloc::codegen::cpu
