#pragma once
#include <string>

#include "ir/graph.h"

namespace yoloc {

/// The graph as text, one node a line:
/// `%out = Conv(%x, %w, %b) {strides=[1, 1]} : float32[1, 16, 320, 320]`, prefixed with `[kN]`
/// (fused group N) once the fusion pass has run.
std::string print_graph(const Graph& g);

}  // namespace yoloc
