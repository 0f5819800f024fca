#pragma once
#include "ir/graph.h"

namespace yoloc {

/// Infers the type of every node output in graph order (declared types fill in what inference
/// leaves unknown), and derives the values of small tensors that follow from known inputs
/// (shape sub-graphs), stored in Value::inferred. Raises a UserError naming the node when an
/// input violates the op's schema.
void infer_shapes(Graph& g);

/// infer_shapes for one node whose inputs are already typed (used while a graph is built).
void infer_node(Node& n);

}  // namespace yoloc
