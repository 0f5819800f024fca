#include "codegen/cuda/conv_task.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "codegen/cuda/detect_tail_template.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

const char* act_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kSilu: return "silu";
  }
  return "none";
}

// The static channel count of a 4-D value, or -1.
int64_t channels(const Value* v) {
  if (!v || v->type.dims.size() != 4 || !v->type.dims[1].known()) return -1;
  return v->type.dims[1].value;
}

bool channel_axis(int64_t axis) { return axis == 1 || axis == -3; }

std::optional<ChannelSlice> placement(const Graph& g, const Value* v, int depth);

// Where v lies when it is an input of a view Concat on the channel axis; nullopt otherwise.
std::optional<ChannelSlice> concat_placement(const Graph& g, const Value* v, int depth) {
  for (const Node* u : g.users(v)) {
    if (u->op != "Concat" || !u->is_view() || !channel_axis(u->attrs.get_int("axis", 0))) continue;
    int64_t offset = 0;
    for (const Value* in : u->inputs) {
      if (in == v) break;
      const int64_t c = channels(in);
      if (c < 0) return std::nullopt;
      offset += c;
    }
    const auto outer = placement(g, u->outputs.at(0), depth + 1);
    if (!outer) return std::nullopt;
    return ChannelSlice{outer->stride, outer->offset + offset};
  }
  return std::nullopt;
}

// The first channel of view Split / Slice p's output `out` within p's input; nullopt for a slice
// of other axes.
std::optional<int64_t> slice_start(const Node& p, const Value* out) {
  const Value* src = p.input(0);
  if (channels(src) < 0 || channels(out) < 0 || src->type.dims.size() != 4) return std::nullopt;
  for (size_t d = 0; d < 4; ++d) {
    if (d != 1 && src->type.dims[d] != out->type.dims[d]) return std::nullopt;
  }
  if (p.op == "Split") {
    if (!channel_axis(p.attrs.get_int("axis", 0))) return std::nullopt;
    int64_t start = 0;
    for (const Value* o : p.outputs) {
      if (o == out) return start;
      start += channels(o);
    }
    return std::nullopt;
  }
  // Slice: data, starts, ends, axes, steps (a view has steps 1).
  const Value* starts = p.input(1);
  const Value* axes = p.input(3);
  if (!starts || !starts->is_constant() || (axes && !axes->is_constant())) return std::nullopt;
  const std::vector<int64_t> s = starts->data.to_int64s();
  std::vector<int64_t> a;
  if (axes) {
    a = axes->data.to_int64s();
  } else {
    for (size_t i = 0; i < s.size(); ++i) a.push_back(static_cast<int64_t>(i));
  }
  if (a.size() != s.size()) return std::nullopt;
  const int64_t c = channels(src);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!channel_axis(a[i])) continue;
    int64_t start = s[i] < 0 ? s[i] + c : s[i];
    return std::clamp<int64_t>(start, 0, c);
  }
  return 0;
}

// Where v lies: in a concat buffer, in a split or sliced buffer, or dense.
std::optional<ChannelSlice> placement(const Graph& g, const Value* v, int depth) {
  const int64_t c = channels(v);
  if (c < 0 || depth > 64) return std::nullopt;
  if (auto s = concat_placement(g, v, depth)) return s;
  // Read in place by a view Split whose outputs are a run of a view Concat's inputs: v is what
  // lies in the concat buffer, from the slot of the split's first output.
  for (const Node* u : g.users(v)) {
    if (u->op == "Split" && u->is_view() && u->input(0) == v) {
      if (auto s = concat_placement(g, u->outputs.at(0), depth)) return s;
    }
  }
  const Node* p = v->producer;
  // A view Concat's output is its buffer (placed above when it is itself a concat input).
  if (p && p->is_view() && p->op != "Concat") {
    if (p->op != "Split" && p->op != "Slice") return std::nullopt;
    const auto start = slice_start(*p, v);
    const auto src = start ? placement(g, p->input(0), depth + 1) : std::nullopt;
    if (!src) return std::nullopt;
    return ChannelSlice{src->stride, src->offset + *start};
  }
  return ChannelSlice{c, 0};
}

}  // namespace

std::optional<ChannelSlice> channel_slice_of(const Graph& g, const Value* v) {
  return placement(g, v, 0);
}

bool is_storage_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

const char* short_dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "f32";
    case DType::kFloat16: return "f16";
    case DType::kBFloat16: return "bf16";
    default: return "?";
  }
}

CudaConvTask CudaConvTask::dense(const ConvTask& conv, DType dtype, DType out_dtype) {
  CudaConvTask t;
  t.conv = conv;
  t.dtype = dtype;
  t.out_dtype = out_dtype;
  t.in = {conv.c, 0};
  t.out = {conv.k, 0};
  t.res = {conv.k, 0};
  return t;
}

bool CudaConvTask::slices_valid() const {
  const auto ok = [](const ChannelSlice& s, int64_t channels) {
    return s.offset >= 0 && channels > 0 && s.offset + channels <= s.stride;
  };
  const bool up_ok =
      !up || (up->sh >= 1 && up->sw >= 1 && !out_nchw && !b2b && ok(up->out, conv.k));
  const bool up_in_ok = !up_in || (up_in->fh >= 1 && up_in->fw >= 1 && conv.h % up_in->fh == 0 &&
                                   conv.w % up_in->fw == 0 && up_in->c0 >= 0 &&
                                   up_in->c0 + up_in->c <= conv.c && ok(up_in->from, up_in->c));
  return ok(in, conv.c) && ok(out, conv.k) && (!conv.residual || ok(res, conv.k)) && up_ok &&
         up_in_ok && (!b2b || ok(b2b->out, b2b->k));
}

CudaConvTask CudaConvTask::second_stage() const {
  YOLOC_CHECK(b2b.has_value(), "{} is no back-to-back pair", key());
  const ConvTask first = conv;
  CudaConvTask t = dense(ConvTask::make(first.n, first.k, first.oh, first.ow, b2b->k, 1, 1, 0,
                                        b2b->act),
                         out_dtype, b2b->out_dtype);
  t.conv.isa = first.isa;
  t.out = b2b->out;
  t.out_nchw = b2b->out_nchw;
  t.scores = scores;
  t.sm = sm;
  return t;
}

std::string CudaConvTask::key() const {
  const ConvTask& t = conv;
  std::string k = fmt::format(
      "cuda_conv2d_nhwc {}->{} n{} c{} h{} w{} k{} {}x{} s{}x{} p{}x{} d{}x{} {}{}{} in{}+{} "
      "out{}+{}",
      short_dtype_name(dtype), short_dtype_name(out_dtype), t.n, t.c, t.h, t.w, t.k, t.kh, t.kw,
      t.sh, t.sw, t.ph, t.pw, t.dh, t.dw, act_name(t.act), t.residual ? " add" : "",
      t.groups == 1 ? "" : fmt::format(" g{}", t.groups), in.stride, in.offset, out.stride,
      out.offset);
  if (t.residual) k += fmt::format(" res{}+{}", res.stride, res.offset);
  if (in_nchw) k += fmt::format(" in-nchw-{}", short_dtype_name(image_dtype));
  if (out_nchw) k += " out-nchw";
  if (up) k += fmt::format(" up{}x{} out{}+{}", up->sh, up->sw, up->out.stride, up->out.offset);
  if (up_in) {
    k += fmt::format(" upin{}+{} {}x{} from{}+{}", up_in->c0, up_in->c, up_in->fh, up_in->fw,
                     up_in->from.stride, up_in->from.offset);
  }
  if (b2b) {
    k += fmt::format(" b2b k2={} {} ->{} out{}+{}{}", b2b->k, act_name(b2b->act),
                     short_dtype_name(b2b->out_dtype), b2b->out.stride, b2b->out.offset,
                     b2b->out_nchw ? " nchw" : "");
  }
  if (scores) k += fmt::format(" scores{}/{}", scores->base, scores->plane);
  if (boxes) {
    k += fmt::format(" boxes{}/{} ->{}", boxes->base, boxes->tail->anchors,
                     short_dtype_name(boxes->tail->output.dtype));
  }
  return k;
}

std::optional<std::string> nhwc_output_twin(const std::string& key) {
  static const std::string kSuffix = " out-nchw";
  if (key.size() > kSuffix.size() &&
      key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0)
    return key.substr(0, key.size() - kSuffix.size());
  static const std::regex kUp(R"( up\d+x\d+ out\d+\+\d+)");
  std::smatch m;
  if (!std::regex_search(key, m, kUp) || m.position(0) == 0) return std::nullopt;
  return key.substr(0, static_cast<size_t>(m.position(0))) + m.suffix().str();
}

std::optional<CudaConvTask> cuda_conv_task_from_group(const Graph& g, const FusedGroup& group,
                                                      DType dtype, DType out_dtype) {
  const std::optional<ConvTask> conv = cpu::conv_task_from_group(g, group);
  if (!conv) return std::nullopt;
  std::vector<const Node*> nodes;
  for (const Node* n : g.nodes()) {
    if (n->group == group.id) nodes.push_back(n);
  }
  CudaConvTask t = CudaConvTask::dense(*conv, dtype, out_dtype);
  // The chain conv -> activation -> Add that conv_task_from_group accepted: its last output is
  // what the group writes, the Add's other operand the residual.
  const Value* cur = nodes[0]->outputs.at(0);
  const Value* residual = nullptr;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node& e = *nodes[i];
    if (e.op == "Add") residual = e.input(0) == cur ? e.input(1) : e.input(0);
    cur = e.outputs.at(0);
  }
  const auto in = placement(g, nodes[0]->input(0), 0);
  const auto out = placement(g, cur, 0);
  const auto res = residual ? placement(g, residual, 0) : std::optional<ChannelSlice>(t.res);
  if (!in || !out || !res) return std::nullopt;
  t.in = *in;
  t.out = *out;
  t.res = *res;
  YOLOC_CHECK(t.slices_valid(), "channel slices of {} out of range", t.key());
  return t;
}

Tensor tap_major_weights(const cpu::ConvTask& t, const float* oihw, int64_t row_multiple) {
  const int64_t kp = (t.k + row_multiple - 1) / row_multiple * row_multiple;
  const int64_t taps = t.c / t.groups * t.kh * t.kw;
  Tensor packed(DType::kFloat32, {taps, kp});
  float* p = packed.data<float>();
  std::fill(p, p + packed.numel(), 0.f);
  for (int64_t n = 0; n < t.k; ++n)
    for (int64_t tap = 0; tap < taps; ++tap) p[tap * kp + n] = oihw[n * taps + tap];
  return packed;
}

}  // namespace yoloc::codegen::cuda
