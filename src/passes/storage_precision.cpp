#include "passes/storage_precision.h"

#include <algorithm>

namespace yoloc {

bool StoragePrecision::run(Graph& g, PassContext& ctx) {
  if (ctx.target != "cuda") return false;
  DType narrow = DType::kUndefined;
  if (ctx.precision == Precision::kFp16) narrow = DType::kFloat16;
  if (ctx.precision == Precision::kBf16) narrow = DType::kBFloat16;
  if (narrow == DType::kUndefined) return false;
  bool changed = false;
  for (Value* v : g.values()) {
    if (v->is_constant() || v->type.dtype != DType::kFloat32 || v->layout.layout != Layout::kNHWC)
      continue;
    if (g.is_output(v) || std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end())
      continue;
    v->type.dtype = narrow;
    changed = true;
  }
  return changed;
}

}  // namespace yoloc
