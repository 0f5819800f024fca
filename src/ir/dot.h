#pragma once
/// Graphviz DOT export of a graph, for `yoloc inspect --dot`.
#include <string>

#include "ir/graph.h"

namespace yoloc {

/// The graph in DOT: each node a box labelled with its op and output type(s), with its constant
/// inputs folded into the label (`W: float32[16, 3, 3, 3]`); graph inputs and outputs are
/// ellipses; edges follow the data flow. The node's name is its tooltip. Once the fusion pass has
/// run, each fused kernel of several nodes is a cluster labelled with the kernel's name.
std::string to_dot(const Graph& g);

}  // namespace yoloc
