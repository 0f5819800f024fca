#include "codegen/opencl/dwconv_template.h"

#include <fmt/format.h>

namespace yoloc::codegen::opencl {

bool DwConvTemplate::matches(const ClConvTask& t) {
  return t.conv.groups > 1 && t.conv.groups == t.conv.c && t.conv.c == t.conv.k;
}

ScheduleSpace DwConvTemplate::space(const ClConvTask&) {
  return {{{"lx", "work items per work-group along a row", {16, 8, 32}},
           {"ly", "work items per work-group along a column", {8, 4, 16}},
           {"rx", "output columns per work item", {2, 1, 4}}}};
}

bool DwConvTemplate::valid(const ClConvTask& t, const ScheduleConfig& cfg) {
  return matches(t) && cfg.in_space(space(t)) && cfg.get("lx") * cfg.get("ly") <= 256;
}

ScheduleConfig DwConvTemplate::default_config(const ClConvTask& t) {
  return {{{"lx", 16}, {"ly", 8}, {"rx", t.conv.ow >= 32 ? 2 : 1}}};
}

ClLowered DwConvTemplate::emit(const ClConvTask& t, const ScheduleConfig& cfg,
                               const std::string& prefix) {
  YOLOC_CHECK(valid(t, cfg), "OpenCL depthwise config {} is not valid for {}", cfg.str(), t.key());
  const cpu::ConvTask& c = t.conv;
  const int64_t lx = cfg.get("lx"), ly = cfg.get("ly"), rx = cfg.get("rx");
  ClLowered k;
  k.args.push_back({t.x, {}, false});
  const float* w = t.w->data.data<float>();  // [C][1][KH][KW]: the kernel's layout already
  k.args.push_back({nullptr, std::vector<float>(w, w + c.k * c.kh * c.kw), false});
  std::vector<float> bias(static_cast<size_t>(c.k), 0.f);
  if (t.bias) std::copy_n(t.bias->data.data<float>(), c.k, bias.begin());
  k.args.push_back({nullptr, std::move(bias), false});
  if (t.res) k.args.push_back({t.res, {}, false});
  k.args.push_back({t.y, {}, true});
  const int out = t.res ? 4 : 3;
  ClLaunch l;
  l.symbol = prefix + "_0";
  for (int i = 0; i <= out; ++i) l.args.push_back(i);
  l.local[0] = lx;
  l.local[1] = ly;
  l.local[2] = 1;
  l.global[0] = (c.ow + lx * rx - 1) / (lx * rx) * lx;
  l.global[1] = (c.oh + ly - 1) / ly * ly;
  l.global[2] = c.n * c.k;
  std::string window;
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    window += fmt::format(
        "      {{ const int iy = oy * {} - {} + {}; if (iy >= 0 && iy < {}) {{\n", c.sh, c.ph,
        ky * c.dh, c.h);
    for (int64_t kx = 0; kx < c.kw; ++kx)
      window += fmt::format(
          "        {{ const int ix = ox * {} - {} + {}; if (ix >= 0 && ix < {}) v = fma(x[iy * {} "
          "+ ix], wk[{}], v); }}\n",
          c.sw, c.pw, kx * c.dw, c.w, c.w, ky * c.kw + kx);
    window += "      } }\n";
  }
  const std::string act = c.act == cpu::Activation::kSilu   ? "v = yc_silu(v);"
                          : c.act == cpu::Activation::kRelu ? "v = fmax(v, 0.f);"
                                                            : "";
  const std::string res =
      t.res ? fmt::format("v += p3[img * {} + ch * {} + oy * {} + ox];", t.res_image,
                          t.res_channel, c.ow)
            : "";
  k.source = kernel_head(l.symbol, l.args.size());
  k.source += fmt::format(R"(  // depthwise conv {key}: {LX}x{LY} work items, {RX} columns each
  const int plane = get_global_id(2), img = plane / {K}, ch = plane % {K};
  const int oy = get_global_id(1);
  if (oy >= {OH}) return;
  __global const float* x = p0 + img * {XS} + ch * {HW};
  float wk[{KHW}];
  for (int i = 0; i < {KHW}; ++i) wk[i] = p1[ch * {KHW} + i];
  const float b = p2[ch];
  for (int r = 0; r < {RX}; ++r) {{
    const int ox = get_global_id(0) * {RX} + r;
    if (ox >= {OW}) break;
    float v = b;
{WINDOW}    {ACT}
    {RES}
    p{OUT}[img * {YS} + ch * {YC} + oy * {OW} + ox] = v;
  }}
}}
)",
                          fmt::arg("key", t.key()), fmt::arg("LX", lx), fmt::arg("LY", ly),
                          fmt::arg("RX", rx), fmt::arg("K", c.k), fmt::arg("OH", c.oh),
                          fmt::arg("OW", c.ow), fmt::arg("XS", t.x_image),
                          fmt::arg("HW", c.h * c.w), fmt::arg("KHW", c.kh * c.kw),
                          fmt::arg("WINDOW", window), fmt::arg("ACT", act), fmt::arg("RES", res),
                          fmt::arg("OUT", out), fmt::arg("YS", t.y_image),
                          fmt::arg("YC", t.y_channel));
  k.launches.push_back(std::move(l));
  return k;
}

}  // namespace yoloc::codegen::opencl
