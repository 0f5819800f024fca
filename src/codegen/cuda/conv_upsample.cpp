#include "codegen/cuda/conv_upsample.h"

#include "codegen/cpu/resize_template.h"

namespace yoloc::codegen::cuda {
namespace {

// The integer factor out / in when nearest Resize along an axis reads index o / factor for every
// output index o; nullopt otherwise.
std::optional<int64_t> integer_factor(const Node& r, int64_t in, int64_t out, double scale) {
  if (in <= 0 || out % in != 0) return std::nullopt;
  const std::string cm = r.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string nm = r.attrs.get_string("nearest_mode", "round_prefer_floor");
  const auto rows = cpu::nearest_indices(in, out, scale, cm, nm);
  const int64_t f = out / in;
  if (!rows || static_cast<int64_t>(rows->size()) != out) return std::nullopt;
  for (int64_t o = 0; o < out; ++o)
    if ((*rows)[static_cast<size_t>(o)] != o / f) return std::nullopt;
  return f;
}

// Whether node r is the only node of its group, a kernel group.
bool alone_in_kernel(const Graph& g, const Node* r) {
  bool kernel = false;
  for (const FusedGroup& grp : g.groups)
    if (grp.id == r->group) kernel = grp.is_kernel();
  if (!kernel) return false;
  for (const Node* n : g.nodes())
    if (n != r && n->group == r->group) return false;
  return true;
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> nearest_factors(const Node& r) {
  if (r.op != "Resize" || r.inputs.empty() || !r.input(0) || r.outputs.size() != 1 ||
      r.attrs.get_string("mode", "nearest") != "nearest")
    return std::nullopt;
  const Value* y = r.input(0);
  const Value* z = r.outputs[0];
  if (!y->type.is_static() || y->layout.layout != Layout::kNHWC || !z->type.is_static() ||
      z->layout != y->layout || z->type.dtype != y->type.dtype)
    return std::nullopt;
  const Shape xs = y->type.static_shape(), zs = z->type.static_shape();
  if (xs.size() != 4 || zs.size() != 4 || zs[0] != xs[0] || zs[1] != xs[1]) return std::nullopt;
  // Scales from the constant input when given (they may differ from the size ratio), else the
  // size ratio (ONNX's rule for `sizes`).
  double sh = static_cast<double>(zs[2]) / static_cast<double>(xs[2]);
  double sw = static_cast<double>(zs[3]) / static_cast<double>(xs[3]);
  const Value* sv = r.input(2);
  if (sv && sv->known() && sv->known()->numel() == 4) {
    const std::vector<double> s = sv->known()->to_doubles();
    sh = s[2];
    sw = s[3];
  }
  const auto fh = integer_factor(r, xs[2], zs[2], sh);
  const auto fw = integer_factor(r, xs[3], zs[3], sw);
  if (!fh || !fw) return std::nullopt;
  return std::pair(*fh, *fw);
}

std::optional<UpsampleConsumer> upsample_consumer(const Graph& g, const Value* y) {
  if (!y || !y->type.is_static() || y->layout.layout != Layout::kNHWC) return std::nullopt;
  const Shape xs = y->type.static_shape();
  if (xs.size() != 4 || xs[0] > kUpsampleMaxBatch) return std::nullopt;
  for (const Node* r : g.users(y)) {
    if (r->input(0) != y || !alone_in_kernel(g, r)) continue;
    const auto f = nearest_factors(*r);
    const auto slice = f ? channel_slice_of(g, r->outputs[0]) : std::nullopt;
    if (!slice) continue;
    return UpsampleConsumer{r, {f->first, f->second, *slice}};
  }
  return std::nullopt;
}

std::optional<UpsampledInput> upsampled_input(const Graph& g, const Value* x, ChannelSlice in) {
  if (!x || !x->producer || !x->type.is_static() || x->layout.layout != Layout::kNHWC)
    return std::nullopt;
  const Node* cat = x->producer;
  const int64_t axis = cat->attrs.get_int("axis", 0);
  if (cat->op != "Concat" || !cat->is_view() || (axis != 1 && axis != -3) ||
      x->type.static_shape()[0] <= kUpsampleMaxBatch || g.users(x).size() != 1)
    return std::nullopt;
  for (const Value* part : cat->inputs) {
    const Node* r = part ? part->producer : nullptr;
    if (!r || g.users(part).size() != 1 || !alone_in_kernel(g, r)) continue;
    const auto f = nearest_factors(*r);
    const Value* src = r->input(0);
    if (!f || src->type.dtype != x->type.dtype) continue;
    const auto at = channel_slice_of(g, part);
    const auto from = channel_slice_of(g, src);
    if (!at || !from || at->stride != in.stride || at->offset < in.offset) continue;
    UpsampledInput u;
    u.resize = r;
    u.source = src;
    u.up_in = {f->first, f->second, at->offset - in.offset, src->type.static_shape()[1], *from};
    return u;
  }
  return std::nullopt;
}

}  // namespace yoloc::codegen::cuda
