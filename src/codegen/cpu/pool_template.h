#pragma once
/// The CPU kernel template of max pooling: a single MaxPool, and the SPPF block of YOLOv5/v8
/// (three chained 5x5 max-pools and the concat of x with their outputs) or the SPP of YOLOX
/// (5/9/13 pools of x in parallel) as one kernel. A chain of "same" stride-1 pools equals one
/// pool whose window is the sum of theirs minus the overlaps (the max of maxes over clipped
/// windows), so both blocks become x plus three windows read from x, with no intermediates.
///
/// IR-driven ABI (emit_util.h): in = {x}, out = {y}. Activations are NCHW16c (lanes 16) or
/// plain NCHW (lanes 1); window j writes channels [(j + copy) * C, (j + copy + 1) * C) of y,
/// the copy of x (SPPF/SPP) channels [0, C).
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpu/conv_template.h"
#include "codegen/cpu/schedule.h"

namespace yoloc::codegen::cpu {

/// One pooling window (pads: top / left; the output size says how far the bottom / right reach).
struct PoolWindow {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
};

/// The workload of one pooling group.
struct PoolTask {
  int64_t n = 1, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t lanes = kBlock;   ///< 16: NCHW16c; 1: plain NCHW
  bool copy_input = false;  ///< y starts with a copy of x (SPPF / SPP)
  std::vector<PoolWindow> windows;

  /// Output channels: C per window, plus C for the copy.
  int64_t out_c() const {
    return c * (static_cast<int64_t>(windows.size()) + (copy_input ? 1 : 0));
  }
  /// e.g. "maxpool_f32 n1 c256 h20 w20 nchw16c copy 5x5s1p2 9x9s1p4 13x13s1p6".
  std::string key() const;
};

/// The task of an anchor group of one MaxPool (one output, no dilation, no epilogue) or of an
/// SPPF group; nullopt for other forms.
std::optional<PoolTask> pool_task_from_group(const Graph& g, const FusedGroup& group);

/// The pool template. Knob "separable": 0 takes the max over each window directly, 1 first
/// reduces the window's rows into a row buffer and then slides along it. Work items are output
/// rows of one channel block (threads split over channel blocks and rows).
class PoolTemplate {
 public:
  static bool matches(const PoolTask& t);
  static ScheduleSpace space(const PoolTask& t);
  static bool valid(const PoolTask& t, const ScheduleConfig& cfg);
  static ScheduleConfig default_config(const PoolTask& t);
  /// Raises InternalError when the task does not match or cfg is not valid.
  static CpuKernel emit(const PoolTask& t, const ScheduleConfig& cfg, const std::string& symbol);
};

}  // namespace yoloc::codegen::cpu
