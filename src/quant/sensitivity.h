#pragma once
/// Per-layer sensitivity: the network's output error when one conv alone runs in int8, measured
/// on the reference executor; the ranking that mixed precision keeps in float first.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/quantize_graph.h"

namespace yoloc::quant {

struct LayerSensitivity {
  std::string conv;
  /// ||y_int8 - y|| / ||y|| over every output element of the inputs (relative L2).
  double error = 0;
};

/// Each conv of `plan` quantized alone in a copy of `g` (the optimized float graph), run on
/// `inputs`; sorted by error, largest first. With `progress`, a status line per conv.
std::vector<LayerSensitivity> measure_sensitivity(const Graph& g, const Int8Plan& plan,
                                                  const std::vector<Tensor>& inputs,
                                                  bool progress);

}  // namespace yoloc::quant
