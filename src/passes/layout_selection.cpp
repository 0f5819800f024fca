#include "passes/layout_selection.h"

#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

bool is_4d(const Value* v) { return v && v->type.has_rank && v->type.rank() == 4; }

/// Whether a 4-D value with this channel count can be stored in `l`.
bool fits(const Value* v, const LayoutSpec& l) {
  if (!is_4d(v)) return false;
  if (l.layout != Layout::kNCHWc) return true;
  const Dim& c = v->type.dims[1];
  return c.known() && c.value % l.block == 0;
}

/// Ops whose result does not depend on how their operands are laid out, as long as all
/// operands agree: elementwise ops and the (global) quantization of activations.
bool layout_agnostic(const Node& n) {
  return n.def->has(kTraitElementwise) ||
         (n.def->has(kTraitQuant) && !n.def->has(kTraitAnchor));
}

/// Concat / Split along channels keep a blocked or channels-last layout when every part fits.
bool channel_data_movement(const Node& n) {
  if (n.op != "Concat" && n.op != "Split") return false;
  const Value* ref = n.op == "Concat" ? n.outputs[0] : n.input(0);
  if (!is_4d(ref)) return false;
  const int64_t axis = n.attrs.get_int("axis", 0);
  return axis == 1 || axis == -3;
}

/// The layout the node reads its data inputs in (kNCHW when it needs NCHW).
LayoutSpec consumer_layout(const Node& n) {
  if (n.outputs.empty() || !is_4d(n.outputs[0])) return {};
  if (n.def->has(kTraitLayoutSensitive) || layout_agnostic(n) || channel_data_movement(n))
    return n.outputs[0]->layout;
  return {};
}

}  // namespace

LayoutSpec preferred_layout(const std::string& target) {
  if (target == "cpu") return {Layout::kNCHWc, 16};
  if (target == "cpu-avx2") return {Layout::kNCHWc, 8};
  if (target == "cpu-neon") return {Layout::kNCHWc, 4};
  if (target == "cuda") return {Layout::kNHWC, 0};
  return {};
}

bool LayoutSelection::run(Graph& g, PassContext& ctx) {
  const LayoutSpec want = preferred_layout(ctx.target);
  if (want == LayoutSpec{}) return false;
  bool changed = false;
  for (Node* n : g.nodes()) {
    for (Value* o : n->outputs) {
      LayoutSpec l;
      if (n->def->has(kTraitLayoutSensitive) && n->def->has(kTraitAnchor) && fits(o, want)) {
        l = want;
      } else if ((layout_agnostic(*n) || channel_data_movement(*n)) && fits(o, want)) {
        // Follow the non-constant 4-D operands when they agree and every part fits.
        bool agree = true, any = false;
        for (const Value* in : n->inputs) {
          if (!in || in->is_constant() || !is_4d(in)) continue;
          any = true;
          agree &= in->layout == want && fits(in, want);
        }
        if (any && agree) l = want;
      }
      if (g.is_output(o)) l = {};
      changed |= o->layout != l;
      o->layout = l;
    }
  }
  return changed;
}

size_t count_layout_conversions(const Graph& g) {
  size_t n = 0;
  for (const Node* node : g.nodes()) {
    const LayoutSpec reads = consumer_layout(*node);
    for (const Value* in : node->inputs)
      if (in && !in->is_constant() && is_4d(in) && in->layout != reads) ++n;
  }
  return n;
}

}  // namespace yoloc
