#include "passes/bn_folding.h"

#include <cmath>
#include <optional>

#include "ir/op_registry.h"
#include "ir/pattern.h"
#include "passes/rewrite_util.h"

namespace yoloc {

namespace {

/// The per-output-channel values of a constant that broadcasts only along axis 1 of a tensor of
/// rank `rank` with `channels` channels (a scalar gives the same value for every channel).
std::optional<std::vector<double>> per_channel(const Tensor& c, int64_t channels, int64_t rank) {
  if (!is_float(c.dtype()) || c.rank() > rank) return std::nullopt;
  const std::vector<double> v = c.to_doubles();
  if (c.numel() == 1) return std::vector<double>(static_cast<size_t>(channels), v[0]);
  const int64_t channel_axis = 1 - (rank - c.rank());  // axis 1 of the output, in c's dims
  for (int64_t i = 0; i < c.rank(); ++i) {
    const int64_t expect = i == channel_axis ? channels : 1;
    if (c.shape()[static_cast<size_t>(i)] != expect) return std::nullopt;
  }
  return v;
}

/// Applies out = conv(x) * scale + shift to the conv's constant weights and bias in place.
void fold_into_conv(Graph& g, Node* conv, const std::vector<double>& scale,
                    const std::vector<double>& shift) {
  const Tensor& w = conv->input(1)->data;
  const int64_t oc = w.shape()[0];
  const int64_t per_oc = w.numel() / oc;
  Tensor nw = w.cast(DType::kFloat64);
  double* pw = nw.data<double>();
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t k = 0; k < per_oc; ++k) pw[o * per_oc + k] *= scale[static_cast<size_t>(o)];
  Tensor nb(DType::kFloat64, {oc});
  double* pb = nb.data<double>();
  const Value* b = conv->input(2);
  const std::vector<double> old_b = b ? b->data.to_doubles() : std::vector<double>(oc, 0.0);
  for (int64_t o = 0; o < oc; ++o)
    pb[o] = old_b[static_cast<size_t>(o)] * scale[static_cast<size_t>(o)] +
            shift[static_cast<size_t>(o)];
  conv->inputs[1] = g.add_constant(conv->input(1)->name + "_folded", nw.cast(w.dtype()));
  Value* bias = g.add_constant(conv->name + "_bias_folded", nb.cast(w.dtype()));
  if (conv->inputs.size() < 3)
    conv->inputs.push_back(bias);
  else
    conv->inputs[2] = bias;
}

/// A Conv whose weights (and bias, if any) are float constants.
bool is_foldable_conv(const Node* n) {
  if (!n || n->op != "Conv" || !n->input(1) || !n->input(1)->is_constant()) return false;
  if (!is_float(n->input(1)->data.dtype())) return false;
  return !n->input(2) || n->input(2)->is_constant();
}

}  // namespace

bool BatchNormFolding::run(Graph& g, PassContext&) {
  bool changed = false;
  bool again = true;
  while (again) {  // a conv may absorb a BN, then a Mul, then an Add
    again = false;
    Matcher m(g);
    for (Node* n : g.nodes()) {
      Value* x = n->input(0);
      Node* conv = x ? x->producer : nullptr;
      if (!is_foldable_conv(conv) || m.use_count(x) != 1 || g.is_output(x)) continue;
      const int64_t oc = conv->input(1)->data.shape()[0];
      const int64_t rank = x->type.rank();
      std::vector<double> scale(static_cast<size_t>(oc), 1.0), shift(static_cast<size_t>(oc), 0.0);
      if (n->op == "BatchNormalization") {
        bool all_const = n->inputs.size() >= 5;
        for (size_t i = 1; i < 5 && all_const; ++i) all_const = n->input(i) && n->input(i)->is_constant();
        if (!all_const || n->outputs.size() != 1) continue;
        const double eps = n->attrs.get_float("epsilon", 1e-5f);
        const auto gamma = n->input(1)->data.to_doubles(), beta = n->input(2)->data.to_doubles();
        const auto mean = n->input(3)->data.to_doubles(), var = n->input(4)->data.to_doubles();
        if (static_cast<int64_t>(gamma.size()) != oc) continue;
        for (size_t o = 0; o < static_cast<size_t>(oc); ++o) {
          scale[o] = gamma[o] / std::sqrt(var[o] + eps);
          shift[o] = beta[o] - mean[o] * scale[o];
        }
      } else if ((n->op == "Mul" || n->op == "Add") && n->input(1) && n->input(1)->is_constant() &&
                 n->outputs[0]->type == x->type) {
        auto c = per_channel(n->input(1)->data, oc, rank);
        if (!c) continue;
        (n->op == "Mul" ? scale : shift) = *c;
      } else {
        continue;
      }
      if (!forward_output(g, n, x)) continue;
      fold_into_conv(g, conv, scale, shift);
      changed = again = true;
      break;  // the matcher's use counts are stale now
    }
    if (again) g.remove_dead();
  }
  return changed;
}

}  // namespace yoloc
