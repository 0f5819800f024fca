#include "codegen/opencl/conv_template.h"

#include <fmt/format.h>

#include "codegen/cpu/tasks.h"

namespace yoloc::codegen::opencl {

std::string ClConvTask::key() const {
  std::string k = conv.key();
  k = k.substr(0, k.rfind(' '));  // the cpu key ends with its ISA
  return fmt::format("cl_{} xs{} ys{}/{} rs{}/{}", k, x_image, y_image, y_channel, res_image,
                     res_channel);
}

std::optional<ClConvTask> conv_task_of(const Graph& g, const FusedGroup& grp,
                                       const StridesOf& strides_of) {
  const auto conv = cpu::conv_task_from_group(g, grp);
  const auto o = cpu::conv_operands(g, grp);
  if (!conv || !o) return std::nullopt;
  ClConvTask t;
  t.conv = *conv;
  t.x = o->x, t.w = o->w, t.bias = o->bias, t.res = o->res, t.y = o->y;
  // Pixels dense within a channel, channels dense within an image for the input.
  const auto pixels_dense = [&](const Value* v, int64_t h, int64_t w) {
    const std::vector<int64_t> s = strides_of(v);
    return s.size() == 4 && s[3] == 1 && s[2] == w && s[1] >= h * w;
  };
  if (!pixels_dense(t.x, conv->h, conv->w) || strides_of(t.x)[1] != conv->h * conv->w)
    return std::nullopt;
  if (!pixels_dense(t.y, conv->oh, conv->ow)) return std::nullopt;
  if (t.res && !pixels_dense(t.res, conv->oh, conv->ow)) return std::nullopt;
  t.x_image = strides_of(t.x)[0];
  t.y_image = strides_of(t.y)[0];
  t.y_channel = strides_of(t.y)[1];
  if (t.res) {
    t.res_image = strides_of(t.res)[0];
    t.res_channel = strides_of(t.res)[1];
  }
  return t;
}

bool ConvTemplate::matches(const ClConvTask& t) { return t.conv.groups == 1; }

ScheduleSpace ConvTemplate::space(const ClConvTask&) {
  return {{{"tm", "output channels per work-group", {32, 64, 16}},
           {"tn", "output pixels per work-group", {64, 32, 128}},
           {"tk", "reduction slice staged in local memory", {16, 8, 32}},
           {"rm", "channels per work item", {4, 2, 8}},
           {"rn", "pixels per work item", {4, 2, 8}}}};
}

bool ConvTemplate::valid(const ClConvTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const int64_t tm = cfg.get("tm"), tn = cfg.get("tn"), rm = cfg.get("rm"), rn = cfg.get("rn");
  if (tm % rm != 0 || tn % rn != 0) return false;
  const int64_t threads = (tm / rm) * (tn / rn);
  return threads >= 32 && threads <= 256;
}

ScheduleConfig ConvTemplate::default_config(const ClConvTask& t) {
  return {{{"tm", t.conv.k <= 32 ? 32 : 64}, {"tn", 64}, {"tk", 16}, {"rm", 4}, {"rn", 4}}};
}

std::vector<float> ConvTemplate::pack_weights(const ClConvTask& t) {
  const cpu::ConvTask& c = t.conv;
  const int64_t kd = c.c * c.kh * c.kw;
  const float* w = t.w->data.data<float>();  // [K][C][KH][KW]
  std::vector<float> out(static_cast<size_t>(kd * c.k));
  for (int64_t m = 0; m < c.k; ++m)
    for (int64_t r = 0; r < kd; ++r) out[static_cast<size_t>(r * c.k + m)] = w[m * kd + r];
  return out;
}

ClLowered ConvTemplate::emit(const ClConvTask& t, const ScheduleConfig& cfg,
                             const std::string& prefix) {
  YOLOC_CHECK(valid(t, cfg), "OpenCL conv config {} is not valid for {}", cfg.str(), t.key());
  const cpu::ConvTask& c = t.conv;
  const int64_t tm = cfg.get("tm"), tn = cfg.get("tn"), tk = cfg.get("tk"), rm = cfg.get("rm"),
                rn = cfg.get("rn");
  const int64_t lx = tn / rn, ly = tm / rm, npix = c.oh * c.ow, kd = c.c * c.kh * c.kw;
  ClLowered k;
  k.args.push_back({t.x, {}, false});
  k.args.push_back({nullptr, pack_weights(t), false});
  std::vector<float> bias(static_cast<size_t>(c.k), 0.f);
  if (t.bias) std::copy_n(t.bias->data.data<float>(), c.k, bias.begin());
  k.args.push_back({nullptr, std::move(bias), false});
  if (t.res) k.args.push_back({t.res, {}, false});
  k.args.push_back({t.y, {}, true});
  const int out = t.res ? 4 : 3;
  const std::string act = c.act == cpu::Activation::kSilu   ? "v = yc_silu(v);"
                          : c.act == cpu::Activation::kRelu ? "v = fmax(v, 0.f);"
                                                            : "";
  const std::string res =
      t.res ? fmt::format("v += p3[img * {} + m * {} + p];", t.res_image, t.res_channel) : "";
  ClLaunch l;
  l.symbol = prefix + "_0";
  for (int i = 0; i <= out; ++i) l.args.push_back(i);
  l.local[0] = lx;
  l.local[1] = ly;
  l.local[2] = 1;
  l.global[0] = (npix + tn - 1) / tn * lx;
  l.global[1] = (c.k + tm - 1) / tm * ly;
  l.global[2] = c.n;
  k.source = kernel_head(l.symbol, l.args.size());
  k.source += fmt::format(R"(  // conv {key}: implicit GEMM, tile {TM}x{TN}x{TK}, {RM}x{RN} per work item
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * {LX} + tx;
  const int n0 = get_group_id(0) * {TN}, m0 = get_group_id(1) * {TM}, img = get_group_id(2);
  __local float As[{TK}][{TM}];
  __local float Bs[{TK}][{TN}];
  float acc[{RM}][{RN}];
  for (int i = 0; i < {RM}; ++i)
    for (int j = 0; j < {RN}; ++j) acc[i][j] = 0.f;
  __global const float* x = p0 + img * {XS};
  for (int k0 = 0; k0 < {KD}; k0 += {TK}) {{
    for (int i = tid; i < {TK} * {TM}; i += {LX} * {LY}) {{
      const int kk = i / {TM}, mm = i % {TM}, r = k0 + kk, m = m0 + mm;
      As[kk][mm] = (r < {KD} && m < {K}) ? p1[r * {K} + m] : 0.f;
    }}
    for (int i = tid; i < {TK} * {TN}; i += {LX} * {LY}) {{
      const int kk = i / {TN}, nn = i % {TN}, r = k0 + kk, p = n0 + nn;
      float v = 0.f;
      if (r < {KD} && p < {NPIX}) {{
        const int ci = r / {KHW}, q = r % {KHW}, ky = q / {KW}, kx = q % {KW};
        const int iy = (p / {OW}) * {SH} - {PH} + ky * {DH}, ix = (p % {OW}) * {SW} - {PW} + kx * {DW};
        if (iy >= 0 && iy < {H} && ix >= 0 && ix < {W}) v = x[ci * {HW} + iy * {W} + ix];
      }}
      Bs[kk][nn] = v;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < {TK}; ++kk) {{
      float a[{RM}], b[{RN}];
      for (int i = 0; i < {RM}; ++i) a[i] = As[kk][ty + i * {LY}];
      for (int j = 0; j < {RN}; ++j) b[j] = Bs[kk][tx + j * {LX}];
      for (int i = 0; i < {RM}; ++i)
        for (int j = 0; j < {RN}; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  for (int i = 0; i < {RM}; ++i) {{
    const int m = m0 + ty + i * {LY};
    if (m >= {K}) continue;
    for (int j = 0; j < {RN}; ++j) {{
      const int p = n0 + tx + j * {LX};
      if (p >= {NPIX}) continue;
      float v = acc[i][j] + p2[m];
      {ACT}
      {RES}
      p{OUT}[img * {YS} + m * {YC} + p] = v;
    }}
  }}
}}
)",
                          fmt::arg("key", t.key()), fmt::arg("TM", tm), fmt::arg("TN", tn),
                          fmt::arg("TK", tk), fmt::arg("RM", rm), fmt::arg("RN", rn),
                          fmt::arg("LX", lx), fmt::arg("LY", ly), fmt::arg("XS", t.x_image),
                          fmt::arg("KD", kd), fmt::arg("K", c.k), fmt::arg("NPIX", npix),
                          fmt::arg("KHW", c.kh * c.kw), fmt::arg("KW", c.kw),
                          fmt::arg("OW", c.ow), fmt::arg("SH", c.sh), fmt::arg("SW", c.sw),
                          fmt::arg("PH", c.ph), fmt::arg("PW", c.pw), fmt::arg("DH", c.dh),
                          fmt::arg("DW", c.dw), fmt::arg("H", c.h), fmt::arg("W", c.w),
                          fmt::arg("HW", c.h * c.w), fmt::arg("ACT", act), fmt::arg("RES", res),
                          fmt::arg("OUT", out), fmt::arg("YS", t.y_image),
                          fmt::arg("YC", t.y_channel));
  k.launches.push_back(std::move(l));
  return k;
}

}  // namespace yoloc::codegen::opencl
