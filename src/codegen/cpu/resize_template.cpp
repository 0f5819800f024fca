#include "codegen/cpu/resize_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "codegen/cpu/emit_util.h"
#include "passes/rewrite_util.h"

namespace yoloc::codegen::cpu {
namespace {

constexpr const char* kResizeKernel = R"(
namespace @SYM@_ns {
constexpr int64_t L = @L@, CB = @CB@, H = @H@, W = @W@, OH = @OH@, OW = @OW@, OBS = @OBS@;
static const int64_t kRows[OH] = {@ROWS@};
static const int64_t kCols[OW] = {@COLS@};
}  // namespace @SYM@_ns

extern "C" void @SYM@(const float* const* in, float* const* out, int64_t begin, int64_t end) {
  using namespace @SYM@_ns;
  for (int64_t it = begin; it < end; ++it) {
    const int64_t oh = it % OH, cb = (it / OH) % CB, n = it / (OH * CB);
    const float* x = in[0] + ((n * CB + cb) * H + kRows[oh]) * W * L;
    float* y = out[0] + n * OBS + (cb * OH + oh) * OW * L;
#pragma GCC unroll @UNROLL@
    for (int64_t ow = 0; ow < OW; ++ow)
      for (int64_t l = 0; l < L; ++l) y[ow * L + l] = x[kCols[ow] * L + l];
  }
}
)";

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

}  // namespace

std::string ResizeTask::key() const {
  return fmt::format("resize_nearest_f32 n{} c{} {}x{}->{}x{} {} bs{} rows[{}] cols[{}]", n, c, h,
                     w, oh, ow, lanes == 1 ? "nchw" : "nchw16c", out_batch_stride, join(rows),
                     join(cols));
}

std::optional<std::vector<int64_t>> nearest_indices(int64_t in, int64_t out, double scale,
                                                    const std::string& coord_mode,
                                                    const std::string& nearest_mode) {
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < out; ++o) {
    double x;
    if (coord_mode == "asymmetric") {
      x = o / scale;
    } else if (coord_mode == "half_pixel") {
      x = (o + 0.5) / scale - 0.5;
    } else if (coord_mode == "pytorch_half_pixel") {
      x = out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    } else if (coord_mode == "align_corners") {
      x = out > 1 ? o * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    } else if (coord_mode == "tf_half_pixel_for_nn") {
      x = (o + 0.5) / scale;
    } else {
      return std::nullopt;
    }
    double r;
    const bool half = x - std::floor(x) == 0.5;
    if (nearest_mode == "round_prefer_floor") {
      r = half ? std::floor(x) : std::round(x);
    } else if (nearest_mode == "round_prefer_ceil") {
      r = half ? std::ceil(x) : std::round(x);
    } else if (nearest_mode == "floor") {
      r = std::floor(x);
    } else if (nearest_mode == "ceil") {
      r = std::ceil(x);
    } else {
      return std::nullopt;
    }
    idx.push_back(std::clamp(static_cast<int64_t>(r), int64_t{0}, in - 1));
  }
  return idx;
}

std::optional<ResizeTask> resize_task_from_group(const Graph& g, const FusedGroup& group) {
  const GroupIO io = group_io(g, group);
  if (group.kind != GroupKind::kAnchor || io.nodes.size() != 1 || io.nodes[0]->op != "Resize" ||
      io.outputs.size() != 1) {
    return std::nullopt;
  }
  const Node& r = *io.nodes[0];
  const Value* x = r.input(0);
  const Value* y = r.outputs[0];
  const auto xs = static_f32_shape(x);
  const auto ys = static_f32_shape(y);
  if (!xs || !ys || xs->size() != 4 || ys->size() != 4 || (*xs)[0] != (*ys)[0] ||
      (*xs)[1] != (*ys)[1] || x->layout != y->layout || x->layout.layout == Layout::kNHWC ||
      r.attrs.get_string("mode", "nearest") != "nearest") {
    return std::nullopt;
  }
  ResizeTask t;
  t.n = (*xs)[0], t.c = (*xs)[1], t.h = (*xs)[2], t.w = (*xs)[3], t.oh = (*ys)[2], t.ow = (*ys)[3];
  t.lanes = x->layout.layout == Layout::kNCHWc ? x->layout.block : 1;
  // Scales from the constant input when given (they may differ from the size ratio), else the
  // size ratio (ONNX's rule for `sizes`).
  double sh = static_cast<double>(t.oh) / t.h, sw = static_cast<double>(t.ow) / t.w;
  const Value* sv = r.input(2);
  if (sv && sv->known() && sv->known()->numel() == 4) {
    const std::vector<double> s = sv->known()->to_doubles();
    sh = s[2], sw = s[3];
  }
  const std::string cm = r.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string nm = r.attrs.get_string("nearest_mode", "round_prefer_floor");
  const auto rows = nearest_indices(t.h, t.oh, sh, cm, nm);
  const auto cols = nearest_indices(t.w, t.ow, sw, cm, nm);
  if (!rows || !cols) return std::nullopt;
  t.rows = *rows, t.cols = *cols;
  t.out_batch_stride = t.c * t.oh * t.ow;
  // Written in place into a view Concat along channels: images lie a whole concat apart.
  const auto users = g.users(y);
  if (users.size() == 1 && users[0]->op == "Concat" && users[0]->is_view() &&
      !g.is_output(y)) {
    const auto cs = static_f32_shape(users[0]->outputs[0]);
    const int64_t axis = users[0]->attrs.get_int("axis", 0);
    if (!cs || (axis != 1 && axis != -3)) return std::nullopt;
    t.out_batch_stride = (*cs)[1] * t.oh * t.ow;
  }
  return t;
}

bool ResizeTemplate::matches(const ResizeTask& t) {
  return t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.oh > 0 && t.ow > 0 &&
         (t.lanes == 1 || (t.lanes == kBlock && t.c % kBlock == 0)) &&
         static_cast<int64_t>(t.rows.size()) == t.oh &&
         static_cast<int64_t>(t.cols.size()) == t.ow && t.out_batch_stride >= t.c * t.oh * t.ow &&
         std::all_of(t.rows.begin(), t.rows.end(), [&](int64_t r) { return r >= 0 && r < t.h; }) &&
         std::all_of(t.cols.begin(), t.cols.end(), [&](int64_t c) { return c >= 0 && c < t.w; });
}

ScheduleSpace ResizeTemplate::space(const ResizeTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"unroll", "unroll of the output-column loop", {1, 2, 4, 8}});
  return s;
}

bool ResizeTemplate::valid(const ResizeTask& t, const ScheduleConfig& cfg) {
  return matches(t) && cfg.in_space(space(t));
}

ScheduleConfig ResizeTemplate::default_config(const ResizeTask& t) {
  YOLOC_CHECK(matches(t), "resize template does not match {}", t.key());
  // A blocked column is one vector copy: unroll a few; plain columns are single floats.
  return ScheduleConfig({{"unroll", t.lanes == 1 ? 8 : 4}});
}

CpuKernel ResizeTemplate::emit(const ResizeTask& t, const ScheduleConfig& cfg,
                               const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "resize config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  std::string body = kResizeKernel;
  const std::pair<const char*, std::string> subs[] = {
      {"@SYM@", symbol},
      {"@L@", std::to_string(t.lanes)},
      {"@CB@", std::to_string(t.c / t.lanes)},
      {"@H@", std::to_string(t.h)},
      {"@W@", std::to_string(t.w)},
      {"@OH@", std::to_string(t.oh)},
      {"@OW@", std::to_string(t.ow)},
      {"@OBS@", std::to_string(t.out_batch_stride)},
      {"@ROWS@", join(t.rows)},
      {"@COLS@", join(t.cols)},
      {"@UNROLL@", std::to_string(cfg.get("unroll"))}};
  for (const auto& [from, to] : subs) replace_all(body, from, to);
  CpuKernel k;
  k.symbol = symbol;
  k.source = fmt::format("{}// resize_nearest_f32 n{} c{} {}x{}->{}x{} | {}{}", kScalarPrelude, t.n,
                         t.c, t.h, t.w, t.oh, t.ow, cfg.str(), body);
  k.work_items = t.n * (t.c / t.lanes) * t.oh;
  return k;
}

}  // namespace yoloc::codegen::cpu
