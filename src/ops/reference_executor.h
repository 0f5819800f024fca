#pragma once
/// Runs a whole graph with the ops' reference implementations: the oracle that every backend and
/// every pass is checked against.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace yoloc {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Checks that `inputs` name every graph input exactly once with the declared dtype, rank, known
/// dims and consistent symbolic dims; raises a UserError that says what was expected.
void check_inputs(const Graph& g, const std::map<std::string, Tensor>& inputs);

/// Executes g on the inputs and returns its outputs in graph order. Intermediate tensors are
/// freed after their last use.
std::vector<NamedTensor> run_reference(const Graph& g, const std::map<std::string, Tensor>& inputs);

/// Called with every value a node computes, as soon as it is computed (calibration reads the
/// activations through it without making them graph outputs).
using ValueObserver = std::function<void(const Value&, const Tensor&)>;
/// run_reference, showing every computed value to `observe`.
std::vector<NamedTensor> run_reference(const Graph& g, const std::map<std::string, Tensor>& inputs,
                                       const ValueObserver& observe);

}  // namespace yoloc
