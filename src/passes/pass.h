#pragma once
/// The pass interface. One pass per file pair in src/passes/; pipeline.cpp holds the one ordered
/// list per optimization level.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/target_attributes.h"

namespace yoloc {

struct Int8Plan;

/// Timing and size after one pass.
struct PassStat {
  std::string name;
  size_t nodes_after = 0;
  double ms = 0;
  bool changed = false;
};

/// What every pass may read: target, precision, level, and where to dump IR.
struct PassContext {
  int opt_level = 1;
  /// What the passes may ask of the target (the default: the reference executor's, which takes
  /// the graph as it is).
  TargetAttributes target;
  Precision precision = Precision::kAuto;
  /// With a precision the target stores narrow (TargetAttributes::narrow_storage): the graph's
  /// float32 inputs and outputs are stored in that type too (compile --io-precision; TensorRT's
  /// fp16 I/O formats), else they keep float32.
  bool narrow_io = false;
  std::string dump_dir;  ///< when set, the IR after each pass goes to DIR/NN-<pass>.txt
  bool verify = false;   ///< run the verifier after each pass (always on in debug builds)
  /// Optional rewrites to leave out (kOptionalPasses names; TVM's PassContext disabled_pass). When
  /// empty, optimize() takes them from $YOLOC_DISABLE_PASSES (comma-separated), so that compile,
  /// bench, exec and inspect can all be compared with and without one.
  std::vector<std::string> disabled;
  std::vector<PassStat> stats;
  /// Post-training int8 (compile --precision int8): the convs to quantize and their scales
  /// (passes/quantize_graph.h); the graph otherwise computes at `precision`. Null: none.
  const Int8Plan* int8 = nullptr;
};

class Pass {
 public:
  virtual ~Pass() = default;
  /// Short snake_case name, as printed by `yoloc inspect --passes`.
  virtual std::string name() const = 0;
  /// Rewrites g; returns true if anything changed.
  virtual bool run(Graph& g, PassContext& ctx) = 0;
};

}  // namespace yoloc
