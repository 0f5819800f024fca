#pragma once
/// The graph IR: SSA values with tensor types, nodes in topological order, constants as values
/// with data.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/attribute.h"
#include "ir/fused_group.h"
#include "ir/layout.h"
#include "ir/type.h"

namespace yoloc {

class Node;
struct OpDef;

/// One element of an integer shape tensor whose data is not known at compile time: a known
/// integer (of any sign: a Reshape target may hold -1), a symbolic dim, or unknown (neither).
struct SymElem {
  std::optional<int64_t> value;
  std::string symbol;
};

/// An SSA value: produced by at most one node, or a graph input, or a constant.
struct Value {
  int id = 0;
  std::string name;
  TensorType type;
  Node* producer = nullptr;
  Tensor data;      ///< defined for constants (initializers, Constant nodes)
  Tensor inferred;  ///< small value derived by shape inference (e.g. a Shape of a static tensor)
  /// The elements of a small integer tensor of rank <= 1 whose data is not known but follows
  /// from symbolic dims (the Shape of images[batch, 3, H, W] is [batch, 3, H, W]); empty
  /// otherwise. Set by shape inference through OpDef::infer_symbolic.
  std::vector<SymElem> symbolic;
  LayoutSpec layout;  ///< how a backend stores it; set by the layout_selection pass

  bool is_constant() const { return data.defined(); }
  /// The constant data, else the inferred value, else nullptr.
  const Tensor* known() const {
    return data.defined() ? &data : (inferred.defined() ? &inferred : nullptr);
  }
};

/// The attribute the views pass sets on nodes that need no kernel: a Concat, Split, Slice or
/// reshape that only re-addresses memory.
inline constexpr const char* kViewAttr = "view";

class Node {
 public:
  int id = 0;
  std::string op;    ///< name of a registered OpDef
  std::string name;  ///< the source node's name, for messages
  std::vector<Value*> inputs;  ///< nullptr marks an omitted optional input
  std::vector<Value*> outputs;
  Attrs attrs;
  const OpDef* def = nullptr;
  int group = -1;  ///< FusedGroup::id once the fusion pass has run

  /// Input i, or nullptr when absent or omitted.
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  bool has_input(size_t i) const { return input(i) != nullptr; }
  /// True once the views pass marked the node as a view (attribute kViewAttr).
  bool is_view() const { return attrs.get_int(kViewAttr, 0) != 0; }
  /// "Conv 'model.0/conv/Conv'" for messages.
  std::string label() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// A deep copy (values and nodes are new objects; tensor data is shared).
  std::unique_ptr<Graph> clone() const;

  Value* add_value(std::string name, TensorType type = {});
  Value* add_constant(std::string name, Tensor data);
  /// Appends a node; creates `num_outputs` fresh values named after the node unless `outputs` are
  /// given. Looks up the OpDef (raises InternalError if `op` is not registered).
  Node* add_node(const std::string& op, std::vector<Value*> inputs, size_t num_outputs,
                 Attrs attrs = {}, std::string name = "");
  Node* add_node_with_outputs(const std::string& op, std::vector<Value*> inputs,
                              std::vector<Value*> outputs, Attrs attrs = {}, std::string name = "");

  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return nodes_.size(); }
  std::vector<Value*> values() const;
  /// The nodes that read v (each once, in graph order).
  std::vector<Node*> users(const Value* v) const;
  /// True if v is one of the graph's outputs.
  bool is_output(const Value* v) const;
  /// The value with this name, or nullptr.
  Value* find_value(const std::string& name) const;

  /// Replaces every use of `from` (node inputs and graph outputs) with `to`.
  void replace_all_uses(Value* from, Value* to);
  /// Removes a node; its outputs must be unused.
  void remove_node(Node* n);
  /// Removes a node but keeps its output values (without producer) for a new node to produce.
  void detach_node(Node* n);
  /// Removes a node and turns its outputs into constants holding `data` (constant folding).
  void replace_with_constants(Node* n, std::vector<Tensor> data);
  /// Removes nodes whose outputs are not used by anything reaching the graph outputs, and
  /// unreferenced values. Returns the number of nodes removed.
  size_t remove_dead();
  /// Re-sorts the nodes topologically (stable); raises InternalError on a cycle.
  void topo_sort();

  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  std::map<std::string, std::string> metadata;  ///< the model's metadata_props
  int64_t opset = 0;
  std::string name;
  std::string producer;
  /// The kernel partition made by the fusion pass (empty before it runs); nodes refer to it by
  /// Node::group.
  std::vector<FusedGroup> groups;
  /// The kernel groups (not views) in an order they can run in: by each group's last node, so a
  /// kernel runs after everything its nodes read (a group's nodes need not be adjacent: the
  /// detect tail starts at the first head output).
  std::vector<const FusedGroup*> kernel_groups_in_run_order() const;

 private:
  std::string unique_name(const std::string& base);
  void forget_name(const std::string& name);
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  /// Per base name, a suffix below which every "<base>_<i>" is taken (so that naming the n-th
  /// value of one base does not probe n names).
  std::unordered_map<std::string, int> taken_below_;
  int next_id_ = 0;
};

}  // namespace yoloc
