#include "passes/space_to_depth_conv.h"

#include <array>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "ir/shape_inference.h"
#include "ops/op_common.h"

namespace yoloc {

namespace {

/// The pixel phase (dy, dx) of an NCHW tensor that a chain of Slices ending at `v` selects:
/// rows dy, dy + 2, ... and columns dx, dx + 2, ... of all images and channels of `source`.
struct Phase {
  Value* source = nullptr;
  int64_t dy = -1, dx = -1;
};

std::optional<Phase> phase_of(Value* v) {
  std::array<int64_t, 2> start = {-1, -1};  // of the rows and the columns
  while (v->producer && v->producer->op == "Slice") {
    const Node& s = *v->producer;
    Value* data = s.input(0);
    // Channels, rows and columns known (the batch may be symbolic).
    if (!data->type.has_rank || data->type.rank() != 4) return {};
    Shape shape;
    for (const Dim& d : data->type.dims) shape.push_back(d.known() ? d.value : -1);
    if (shape[1] < 0 || shape[2] < 0 || shape[3] < 0) return {};
    for (size_t i = 1; i < s.inputs.size(); ++i)
      if (s.input(i) && !s.input(i)->is_constant()) return {};
    const auto axes = slice_axes(s, shape, s.input(1)->data, s.input(2)->data,
                                 s.input(3) ? &s.input(3)->data : nullptr,
                                 s.input(4) ? &s.input(4)->data : nullptr);
    for (const SliceAxis& a : axes) {
      const int64_t dim = shape[static_cast<size_t>(a.axis)];
      if (dim >= 0 && a.step == 1 && a.start == 0 && a.count == dim) continue;  // the whole axis
      if (a.axis < 2 || start[static_cast<size_t>(a.axis - 2)] >= 0) return {};
      if (a.step != 2 || a.start > 1 || dim % 2 != 0 || a.count != dim / 2) return {};
      start[static_cast<size_t>(a.axis - 2)] = a.start;
    }
    v = data;
  }
  if (start[0] < 0 || start[1] < 0) return {};
  return Phase{v, start[0], start[1]};
}

/// The four phases the inputs of `cat` (a channel Concat) select from one tensor, each once, in
/// the concat's order; empty if it is not a space-to-depth.
std::vector<Phase> space_to_depth_phases(const Node* cat) {
  if (!cat || cat->op != "Concat" || cat->inputs.size() != 4) return {};
  const int64_t axis = cat->attrs.get_int("axis", 0);
  if (axis != 1 && axis != -3) return {};
  std::vector<Phase> phases;
  bool seen[2][2] = {};
  for (Value* in : cat->inputs) {
    const auto p = phase_of(in);
    if (!p || (!phases.empty() && p->source != phases[0].source) || seen[p->dy][p->dx]) return {};
    seen[p->dy][p->dx] = true;
    phases.push_back(*p);
  }
  return phases;
}

/// W'[k, c, 2r + dy, 2s + dx] = W[k, i * C + c, r, s] for phase i = (dy, dx): every element of
/// W' comes from exactly one of W (the four phases tile each 2x2 block of taps).
Tensor moved_weights(const Tensor& w, const std::vector<Phase>& phases, int64_t c) {
  const Shape& s = w.shape();
  const int64_t k = s[0], kh = s[2], kw = s[3];
  Tensor out(w.dtype(), {k, c, 2 * kh, 2 * kw});
  const size_t esize = dtype_size(w.dtype());
  const auto* from = static_cast<const uint8_t*>(w.raw());
  auto* to = static_cast<uint8_t*>(out.raw());
  for (int64_t o = 0; o < k; ++o)
    for (size_t i = 0; i < phases.size(); ++i)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t r = 0; r < kh; ++r)
          for (int64_t q = 0; q < kw; ++q) {
            const int64_t src = ((o * 4 * c + static_cast<int64_t>(i) * c + ci) * kh + r) * kw + q;
            const int64_t dst =
                ((o * c + ci) * 2 * kh + 2 * r + phases[i].dy) * 2 * kw + 2 * q + phases[i].dx;
            std::memcpy(to + dst * esize, from + src * esize, esize);
          }
  return out;
}

/// True for a group-1, stride-1, undilated 2-D Conv with explicit pads and constant float
/// weights.
bool plain_conv(const Node& n) {
  if (n.op != "Conv" || n.attrs.get_int("group", 1) != 1) return false;
  if (n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET") return false;
  const Value* w = n.input(1);
  if (!w || !w->is_constant() || !is_float(w->data.dtype()) || w->data.rank() != 4) return false;
  return n.attrs.get_ints("strides", {1, 1}) == std::vector<int64_t>{1, 1} &&
         n.attrs.get_ints("dilations", {1, 1}) == std::vector<int64_t>{1, 1};
}

}  // namespace

bool SpaceToDepthConv::run(Graph& g, PassContext&) {
  bool changed = false;
  for (Node* conv : g.nodes()) {
    if (!plain_conv(*conv)) continue;
    const std::vector<Phase> phases = space_to_depth_phases(conv->input(0)->producer);
    if (phases.empty()) continue;
    Value* x = phases[0].source;
    const Tensor& w = conv->input(1)->data;
    const int64_t c = x->type.dims[1].value;
    if (w.shape()[1] != 4 * c) continue;
    std::vector<int64_t> pads = conv->attrs.get_ints("pads", {0, 0, 0, 0});
    for (int64_t& p : pads) p *= 2;
    // Output row o read rows o - pt .. o - pt + KH - 1 of the phase images, which are rows
    // 2(o - pt) + dy .. of x: a window of 2KH rows at stride 2 from 2o - 2pt.
    conv->inputs[0] = x;
    conv->inputs[1] =
        g.add_constant(conv->input(1)->name + "_space_to_depth", moved_weights(w, phases, c));
    conv->attrs.set("kernel_shape", std::vector<int64_t>{2 * w.shape()[2], 2 * w.shape()[3]});
    conv->attrs.set("strides", std::vector<int64_t>{2, 2});
    conv->attrs.set("pads", pads);
    const TensorType type = conv->outputs[0]->type;
    infer_node(*conv);
    YOLOC_CHECK(conv->outputs[0]->type == type, "space_to_depth_conv changed {}'s output type",
                conv->label());
    changed = true;
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace yoloc
