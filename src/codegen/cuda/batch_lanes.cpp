#include "codegen/cuda/batch_lanes.h"

#include <algorithm>

#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

/// A graph input or output root must hold its images one after another: its first dimension is
/// the batch (every layout keeps it outermost).
void check_batch_first(const Value& v, int64_t batch) {
  const Shape s = v.type.static_shape();
  if (s.empty() || s[0] != batch)
    user_error(
        "--lanes: '{}' (shape {}) does not have the batch ({}) as its first dimension; "
        "compile this model with --lanes 1",
        v.name, v.type.str(), batch);
}

}  // namespace

LaneLayout::LaneLayout(const Graph& g, const MemoryPlan& plan, const ArenaMap& arena, int lanes)
    : g_(g), plan_(plan), arena_(arena), lanes_(lanes) {
  YOLOC_CHECK(lanes >= 1, "LaneLayout: {} lanes", lanes);
  if (lanes_ == 1) {
    bytes_ = arena.bytes();
    return;
  }
  YOLOC_CHECK(!g.inputs.empty(), "LaneLayout: a graph without inputs has no batch");
  const int64_t batch = g.inputs[0]->type.static_shape().at(0);
  const auto n = static_cast<uint64_t>(lanes_);
  lane_stride_ = align_to_arena(std::max<uint64_t>(plan.arena_bytes, 1));
  uint64_t end = n * lane_stride_;
  for (const Value* in : g.inputs) {
    check_batch_first(*in, batch);
    inputs_.push_back(end);
    end = align_to_arena(end + n * stored_bytes(*in));
  }
  for (const Value* out : g.outputs) {
    const auto it = plan.values.find(out->name);
    if (it == plan.values.end() || it->second.placement != Placement::kArena) continue;
    const int a = it->second.allocation;
    if (outputs_.contains(a)) continue;
    const Allocation& alloc = plan.allocations.at(static_cast<size_t>(a));
    const Value* root = g.find_value(alloc.value);
    YOLOC_CHECK(root, "allocation of '{}' has no value", alloc.value);
    check_batch_first(*root, batch);
    outputs_.emplace(a, end);
    end = align_to_arena(end + n * alloc.bytes);
  }
  bytes_ = std::max<uint64_t>(end, kArenaAlignment);
}

uint64_t LaneLayout::offset(const Value* v, int lane) const {
  YOLOC_CHECK(lane >= 0 && lane < lanes_, "lane {} of {}", lane, lanes_);
  const uint64_t at = arena_.place(v).offset;  // also checks that v is stored
  if (lanes_ == 1) return at;
  const auto k = static_cast<uint64_t>(lane);
  const auto in = std::find(g_.inputs.begin(), g_.inputs.end(), v);
  if (in != g_.inputs.end())
    return inputs_[static_cast<size_t>(in - g_.inputs.begin())] + k * stored_bytes(**in);
  const ValueSlot& s = plan_.values.at(v->name);
  if (s.placement == Placement::kInput) {
    const auto i = static_cast<size_t>(s.input);
    return inputs_[i] + k * stored_bytes(*g_.inputs[i]) + s.offset;
  }
  const Allocation& alloc = plan_.allocations.at(static_cast<size_t>(s.allocation));
  if (const auto it = outputs_.find(s.allocation); it != outputs_.end())
    return it->second + k * alloc.bytes + (s.offset - alloc.offset);
  return k * lane_stride_ + s.offset;
}

std::vector<uint64_t> LaneLayout::input_offsets() const {
  return lanes_ == 1 ? arena_.input_offsets() : inputs_;
}

}  // namespace yoloc::codegen::cuda
