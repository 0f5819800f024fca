#pragma once
#include "ir/graph.h"

namespace yoloc {

/// Checks the IR invariants: SSA (one producer per value, inputs defined before use), every
/// node's op registered with its input/output counts in range, graph outputs produced, and
/// every value typed. Raises InternalError describing the first violation.
void verify(const Graph& g);

}  // namespace yoloc
