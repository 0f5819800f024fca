#include "codegen/arena_map.h"

#include <algorithm>

#include "core/error.h"

namespace yoloc {

uint64_t align_to_arena(uint64_t v) {
  return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

ArenaMap::ArenaMap(const Graph& g, const MemoryPlan& plan) : g_(g), plan_(plan) {
  uint64_t end = align_to_arena(plan.arena_bytes);
  for (const Value* in : g.inputs) {
    input_offsets_.push_back(end);
    end = align_to_arena(end + stored_bytes(*in));
  }
  bytes_ = std::max<uint64_t>(end, kArenaAlignment);
}

ArenaMap::Place ArenaMap::place(const Value* v) const {
  const auto in = std::find(g_.inputs.begin(), g_.inputs.end(), v);
  if (in != g_.inputs.end()) {
    const auto i = static_cast<size_t>(in - g_.inputs.begin());
    return {input_offsets_[i], stored_bytes(*v), true};
  }
  const auto it = plan_.values.find(v->name);
  YOLOC_CHECK(it != plan_.values.end(), "value '{}' has no place in the memory plan", v->name);
  const ValueSlot& s = it->second;
  switch (s.placement) {
    case Placement::kArena:
      return {s.offset, plan_.allocations.at(static_cast<size_t>(s.allocation)).bytes,
              s.contiguous};
    case Placement::kInput: {
      YOLOC_CHECK(s.input >= 0, "value '{}' views an unknown input", v->name);
      const auto i = static_cast<size_t>(s.input);
      return {input_offsets_[i] + s.offset, stored_bytes(*g_.inputs[i]), s.contiguous};
    }
    case Placement::kConstant:
    case Placement::kInternal: break;
  }
  YOLOC_CHECK(false, "value '{}' is read by a kernel but is not stored", v->name);
  return {};
}

bool Availability::available(const Value* v) const {
  if (v->is_constant() || written_.count(v) ||
      std::find(g_.inputs.begin(), g_.inputs.end(), v) != g_.inputs.end())
    return true;
  const Node* p = v->producer;
  if (!p || !p->is_view()) return false;
  // A view holds data once what it re-addresses does: all inputs of a concat, the input of a
  // split / slice / reshape.
  return std::all_of(p->inputs.begin(), p->inputs.end(),
                     [&](const Value* in) { return !in || available(in); });
}

}  // namespace yoloc
