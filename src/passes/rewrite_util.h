#pragma once
/// Small helpers the rewrite passes share.
#include "ir/graph.h"

namespace yoloc {

/// True if every element of the constant t equals x.
bool constant_all_equal(const Tensor& t, double x);
/// Makes node n's output 0 an alias of `replacement`: every use is redirected. Returns false (and
/// changes nothing) when the output is a graph output or the types differ.
bool forward_output(Graph& g, Node* n, Value* replacement);

}  // namespace yoloc
