#include "codegen/cpu/pool_template.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/cpu/emit_util.h"

namespace yoloc::codegen::cpu {
namespace {

// Per window: the row / column ranges it reads, then the max. @W@ placeholders per window are
// filled in by emit().
constexpr const char* kHead = R"(
namespace @SYM@_ns {
constexpr int64_t L = @L@, CB = @CB@, H = @H@, W = @W@, OH = @OH@, OW = @OW@, OCB = @OCB@;
constexpr int64_t COPY = @COPY@, N = @N@;
}  // namespace @SYM@_ns

extern "C" void @SYM@(const float* const* in, float* const* out, int64_t begin, int64_t end) {
  using namespace @SYM@_ns;
  for (int64_t it = begin; it < end; ++it) {
    const int64_t oh = it % OH, cb = (it / OH) % CB, n = it / (OH * CB);
    const float* x = in[0] + (n * CB + cb) * H * W * L;
    if (COPY) {
      float* y = out[0] + ((n * OCB + cb) * OH + oh) * OW * L;
      for (int64_t i = 0; i < W * L; ++i) y[i] = x[oh * W * L + i];
    }
)";

// Direct: the max over the clipped window for each output column.
constexpr const char* kDirect = R"(    {
      constexpr int64_t KH = @KH@, KW = @KW@, SH = @SH@, SW = @SW@, PH = @PH@, PW = @PW@;
      float* y = out[0] + ((n * OCB + (@J@ + COPY) * CB + cb) * OH + oh) * OW * L;
      const int64_t r0 = oh * SH - PH < 0 ? 0 : oh * SH - PH;
      const int64_t r1 = oh * SH - PH + KH > H ? H : oh * SH - PH + KH;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t s0 = ow * SW - PW < 0 ? 0 : ow * SW - PW;
        const int64_t s1 = ow * SW - PW + KW > W ? W : ow * SW - PW + KW;
        float acc[L];
        for (int64_t l = 0; l < L; ++l) acc[l] = -INFINITY;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t s = s0; s < s1; ++s)
            for (int64_t l = 0; l < L; ++l) acc[l] = yc_max(acc[l], x[(r * W + s) * L + l]);
        for (int64_t l = 0; l < L; ++l) y[ow * L + l] = acc[l];
      }
    }
)";

// Separable: the rows of the window reduced into one buffer row, then slid along.
constexpr const char* kSeparable = R"(    {
      constexpr int64_t KH = @KH@, KW = @KW@, SH = @SH@, SW = @SW@, PH = @PH@, PW = @PW@;
      float* y = out[0] + ((n * OCB + (@J@ + COPY) * CB + cb) * OH + oh) * OW * L;
      const int64_t r0 = oh * SH - PH < 0 ? 0 : oh * SH - PH;
      const int64_t r1 = oh * SH - PH + KH > H ? H : oh * SH - PH + KH;
      static thread_local float col[W * L];
      for (int64_t i = 0; i < W * L; ++i) col[i] = -INFINITY;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t i = 0; i < W * L; ++i) col[i] = yc_max(col[i], x[r * W * L + i]);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t s0 = ow * SW - PW < 0 ? 0 : ow * SW - PW;
        const int64_t s1 = ow * SW - PW + KW > W ? W : ow * SW - PW + KW;
        float acc[L];
        for (int64_t l = 0; l < L; ++l) acc[l] = -INFINITY;
        for (int64_t s = s0; s < s1; ++s)
          for (int64_t l = 0; l < L; ++l) acc[l] = yc_max(acc[l], col[s * L + l]);
        for (int64_t l = 0; l < L; ++l) y[ow * L + l] = acc[l];
      }
    }
)";

// The window of a pool node over x, following a chain of same-size stride-1 pools back to x.
std::optional<PoolWindow> window_of(const Node* pool, const Value* x) {
  if (!pool || pool->op != "MaxPool" || pool->outputs.size() != 1) return std::nullopt;
  const auto k = pool->attrs.get_ints("kernel_shape", {});
  const auto s = pool->attrs.get_ints("strides", {1, 1});
  const auto p = pool->attrs.get_ints("pads", {0, 0, 0, 0});
  const auto d = pool->attrs.get_ints("dilations", {1, 1});
  if (k.size() != 2 || s.size() != 2 || p.size() != 4 || d != std::vector<int64_t>{1, 1} ||
      pool->attrs.get_string("auto_pad", "NOTSET") != "NOTSET") {
    return std::nullopt;
  }
  PoolWindow w{k[0], k[1], s[0], s[1], p[0], p[1]};
  if (pool->input(0) == x) return w;
  // Chained: only exact for "same" stride-1 pools (odd windows, centred).
  const auto same = [](const PoolWindow& v) {
    return v.sh == 1 && v.sw == 1 && v.kh % 2 == 1 && v.kw % 2 == 1 && v.ph == v.kh / 2 &&
           v.pw == v.kw / 2;
  };
  const auto prev = window_of(pool->input(0)->producer, x);
  if (!prev || !same(w) || !same(*prev)) return std::nullopt;
  return PoolWindow{prev->kh + w.kh - 1, prev->kw + w.kw - 1, 1, 1,
                    prev->ph + w.ph,     prev->pw + w.pw};
}

}  // namespace

std::string PoolTask::key() const {
  std::string s = fmt::format("maxpool_f32 n{} c{} h{} w{} {}{}", n, c, h, w,
                              lanes == 1 ? "nchw" : "nchw16c", copy_input ? " copy" : "");
  for (const PoolWindow& v : windows) {
    s += fmt::format(" {}x{}s{}x{}p{}x{}", v.kh, v.kw, v.sh, v.sw, v.ph, v.pw);
  }
  return s;
}

std::optional<PoolTask> pool_task_from_group(const Graph& g, const FusedGroup& group) {
  const GroupIO io = group_io(g, group);
  if (io.inputs.size() != 1 || io.outputs.size() != 1) return std::nullopt;
  const Value* x = io.inputs[0];
  const Value* y = io.outputs[0];
  const auto xs = static_f32_shape(x);
  const auto ys = static_f32_shape(y);
  if (!xs || !ys || xs->size() != 4 || ys->size() != 4 || x->layout != y->layout ||
      !dense_output(g, y)) {
    return std::nullopt;
  }
  PoolTask t;
  t.n = (*xs)[0], t.c = (*xs)[1], t.h = (*xs)[2], t.w = (*xs)[3], t.oh = (*ys)[2], t.ow = (*ys)[3];
  t.lanes = x->layout.layout == Layout::kNCHWc ? x->layout.block : 1;
  if (x->layout.layout == Layout::kNHWC) return std::nullopt;
  if (group.kind == GroupKind::kAnchor && io.nodes.size() == 1) {
    const auto w = window_of(io.nodes[0], x);
    if (!w) return std::nullopt;
    t.windows = {*w};
  } else if (group.kind == GroupKind::kSppf) {
    const Node* cat = y->producer;
    if (!cat || cat->op != "Concat" || cat->input(0) != x || t.oh != t.h || t.ow != t.w) {
      return std::nullopt;
    }
    const int64_t axis = cat->attrs.get_int("axis", 0);
    if (axis != 1 && axis != -3) return std::nullopt;
    t.copy_input = true;
    for (size_t i = 1; i < cat->inputs.size(); ++i) {
      const auto w = window_of(cat->input(i)->producer, x);
      if (!w || w->sh != 1 || w->sw != 1) return std::nullopt;
      t.windows.push_back(*w);
    }
  } else {
    return std::nullopt;
  }
  if ((*ys)[1] != t.out_c() || (*ys)[0] != t.n) return std::nullopt;
  return t;
}

bool PoolTemplate::matches(const PoolTask& t) {
  bool ok = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.oh > 0 && t.ow > 0 && !t.windows.empty();
  ok = ok && (t.lanes == 1 || (t.lanes == kBlock && t.c % kBlock == 0));
  for (const PoolWindow& v : t.windows) {
    ok = ok && v.kh > 0 && v.kw > 0 && v.sh > 0 && v.sw > 0 && v.ph >= 0 && v.pw >= 0 &&
         v.ph < v.kh && v.pw < v.kw;
  }
  // Every output row and column must see at least one input element.
  for (const PoolWindow& v : t.windows) {
    ok = ok && (t.oh - 1) * v.sh - v.ph < t.h && (t.ow - 1) * v.sw - v.pw < t.w;
  }
  return ok;
}

ScheduleSpace PoolTemplate::space(const PoolTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"separable", "0: direct window max; 1: rows first, then columns", {0, 1}});
  return s;
}

bool PoolTemplate::valid(const PoolTask& t, const ScheduleConfig& cfg) {
  return matches(t) && cfg.in_space(space(t));
}

ScheduleConfig PoolTemplate::default_config(const PoolTask& t) {
  YOLOC_CHECK(matches(t), "pool template does not match {}", t.key());
  // Separable reads each input row once per output row instead of KW times: worth it once the
  // windows are wide.
  int64_t widest = 0;
  for (const PoolWindow& v : t.windows) widest = std::max(widest, v.kw);
  return ScheduleConfig({{"separable", widest >= 5 ? 1 : 0}});
}

CpuKernel PoolTemplate::emit(const PoolTask& t, const ScheduleConfig& cfg,
                             const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "pool config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  std::string body = kHead;
  for (size_t j = 0; j < t.windows.size(); ++j) {
    std::string part = cfg.get("separable") ? kSeparable : kDirect;
    const PoolWindow& v = t.windows[j];
    const std::pair<const char*, int64_t> subs[] = {{"@KH@", v.kh},
                                                    {"@KW@", v.kw},
                                                    {"@SH@", v.sh},
                                                    {"@SW@", v.sw},
                                                    {"@PH@", v.ph},
                                                    {"@PW@", v.pw},
                                                    {"@J@", static_cast<int64_t>(j)}};
    for (const auto& [from, to] : subs) replace_all(part, from, std::to_string(to));
    body += part;
  }
  body += "  }\n}\n";
  const std::pair<const char*, std::string> subs[] = {
      {"@SYM@", symbol},
      {"@L@", std::to_string(t.lanes)},
      {"@CB@", std::to_string(t.c / t.lanes)},
      {"@H@", std::to_string(t.h)},
      {"@W@", std::to_string(t.w)},
      {"@OH@", std::to_string(t.oh)},
      {"@OW@", std::to_string(t.ow)},
      {"@OCB@", std::to_string(t.out_c() / t.lanes)},
      {"@COPY@", t.copy_input ? "1" : "0"},
      {"@N@", std::to_string(t.n)}};
  for (const auto& [from, to] : subs) replace_all(body, from, to);
  CpuKernel k;
  k.symbol = symbol;
  k.source = std::string(kScalarPrelude) + "// " + t.key() + " | " + cfg.str() + body;
  k.work_items = t.n * (t.c / t.lanes) * t.oh;
  return k;
}

}  // namespace yoloc::codegen::cpu
