#pragma once
/// Which convolutions of an optimized float graph run in int8: all but those kept in float by
/// rule (where every published int8 YOLO lost its accuracy) or by the user's --int8-skip.
#include <string>
#include <vector>

#include "ir/graph.h"

namespace yoloc::quant {

struct ConvChoice {
  std::string conv;   ///< the conv's output value (its name in calibration files and plans)
  std::string input;  ///< its input activation
  std::string float_reason;  ///< empty: int8; else why it stays float
};

/// Every Conv of g in graph order with its choice. Float by rule: the stem (reads a graph
/// input), the detect head's last convs (no other conv reads what they compute, so their
/// outputs are the boxes and scores), the DFL and any conv after a Softmax (decode
/// arithmetic), a depthwise conv (group > 1, one input channel per group: each output channel
/// reads one input channel, so a channel whose range is far below the tensor's keeps only a few
/// of the per-tensor scale's 256 levels; YOLOX-nano lost 0.045 mAP50-95 to its 30 depthwise
/// convs) and a conv whose weights are not a float32 constant; float by the user: a conv
/// whose output or node name matches one of `skip` (shell wildcards: "*cv3*").
std::vector<ConvChoice> choose_int8_convs(const Graph& g, const std::vector<std::string>& skip);

/// True when `name` matches one of the wildcard `patterns`.
bool matches_any(const std::string& name, const std::vector<std::string>& patterns);

}  // namespace yoloc::quant
