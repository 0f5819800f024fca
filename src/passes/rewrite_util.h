#pragma once
/// Small helpers the rewrite passes share.
#include <unordered_map>

#include "ir/graph.h"

namespace yoloc {

/// True if every element of the constant t equals x.
bool constant_all_equal(const Tensor& t, double x);
/// Makes node n's output 0 an alias of `replacement`: every use is redirected. Returns false (and
/// changes nothing) when the output is a graph output or the types differ.
bool forward_output(Graph& g, Node* n, Value* replacement);

/// Redirections of values that a pass walking the nodes in order collects and applies to each
/// node before it looks at it: the effect of Graph::replace_all_uses for every redirection, in
/// one pass instead of one whole-graph scan per redirection (a node reads only values produced
/// before it). Graph outputs are never redirected.
class Redirects {
 public:
  /// Redirects the uses of `from` to `to` (itself resolved); false (nothing recorded) when
  /// `from` is a graph output or the types differ.
  bool add(const Graph& g, const Value* from, Value* to);
  /// Rewrites n's inputs that were redirected; true when one was.
  bool apply(Node& n) const;
  bool empty() const { return to_.empty(); }

 private:
  Value* resolve(Value* v) const;
  std::unordered_map<const Value*, Value*> to_;
};

}  // namespace yoloc
