#pragma once
/// A small declarative pattern matcher over the dataflow graph, used by the rewrite and fusion
/// passes:
///   auto silu = Pattern::op("Mul", {Pattern::any("x"), Pattern::op("Sigmoid", {Pattern::any("x")})})
///                   .commutative();
/// A capture name used twice must bind the same value both times.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace yoloc {

class Pattern {
 public:
  /// Any value (a graph input, a constant or a node output).
  static Pattern any(std::string capture = "");
  /// A constant value (Value::is_constant()).
  static Pattern constant(std::string capture = "");
  /// A value produced as output 0 of a node of this op whose inputs match `inputs` in order
  /// (extra node inputs are not looked at).
  static Pattern op(std::string op, std::vector<Pattern> inputs = {}, std::string capture = "");
  /// Like op(), for any op having all of `traits`.
  static Pattern with_traits(uint32_t traits, std::vector<Pattern> inputs = {},
                             std::string capture = "");

  /// For a two-input op: also try the inputs swapped.
  Pattern& commutative() {
    commutative_ = true;
    return *this;
  }
  /// The matched value must have exactly one user and not be a graph output (so the producing
  /// node can be absorbed by a rewrite).
  Pattern& single_use() {
    single_use_ = true;
    return *this;
  }

 private:
  friend class Matcher;
  enum class Kind { kAny, kConstant, kOp, kTraits };
  Kind kind_ = Kind::kAny;
  std::string op_;
  uint32_t traits_ = 0;
  std::vector<Pattern> inputs_;
  std::string capture_;
  bool commutative_ = false;
  bool single_use_ = false;
};

/// The bindings of one match: captured values, and the nodes producing captured op values.
struct Match {
  std::map<std::string, Value*> values;
  std::map<std::string, Node*> nodes;
  Value* value(const std::string& name) const;
  Node* node(const std::string& name) const;
};

/// Matches patterns against values of one graph; precomputes use counts. Rebuild it after the
/// graph changes.
class Matcher {
 public:
  explicit Matcher(const Graph& g);
  /// Tries to match `p` rooted at value v.
  bool match(const Pattern& p, Value* v, Match* m) const;
  size_t use_count(const Value* v) const;

 private:
  bool match_rec(const Pattern& p, Value* v, Match& m) const;
  std::unordered_map<const Value*, size_t> uses_;
};

}  // namespace yoloc
