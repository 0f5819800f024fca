#include "ops/nn_common.h"

#include <fmt/ranges.h>

namespace yoloc {

std::vector<int64_t> ints_attr(const Node& n, const char* name, size_t count, int64_t dflt) {
  if (!n.attrs.has(name)) return std::vector<int64_t>(count, dflt);
  std::vector<int64_t> v = n.attrs.get_ints(name);
  if (v.size() != count)
    user_error("{}: attribute '{}' has {} values [{}], expected {}", n.label(), name, v.size(),
               fmt::join(v, ", "), count);
  return v;
}

WindowParams window_params(const Node& n, std::vector<int64_t> kernel) {
  WindowParams p;
  const size_t r = kernel.size();
  p.kernel = std::move(kernel);
  p.strides = ints_attr(n, "strides", r, 1);
  p.dilations = ints_attr(n, "dilations", r, 1);
  p.pads = ints_attr(n, "pads", 2 * r, 0);
  p.auto_pad = n.attrs.get_string("auto_pad", "NOTSET");
  p.ceil_mode = n.attrs.get_int("ceil_mode", 0) != 0;
  if (p.auto_pad != "NOTSET" && p.auto_pad != "VALID" && p.auto_pad != "SAME_UPPER" &&
      p.auto_pad != "SAME_LOWER")
    user_error("{}: auto_pad '{}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", n.label(),
               p.auto_pad);
  for (size_t i = 0; i < r; ++i) {
    if (p.kernel[i] < 1 || p.strides[i] < 1 || p.dilations[i] < 1)
      user_error("{}: kernel [{}], strides [{}] and dilations [{}] must be positive", n.label(),
                 fmt::join(p.kernel, ", "), fmt::join(p.strides, ", "),
                 fmt::join(p.dilations, ", "));
  }
  for (int64_t v : p.pads)
    if (v < 0) user_error("{}: pads [{}] must not be negative", n.label(), fmt::join(p.pads, ", "));
  return p;
}

int64_t window_output(WindowParams& p, int64_t i, int64_t in, const Node& n) {
  const int64_t r = p.rank();
  const int64_t s = p.strides[i];
  const int64_t span = (p.kernel[i] - 1) * p.dilations[i] + 1;
  int64_t& pb = p.pads[i];
  int64_t& pe = p.pads[r + i];
  if (p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER") {
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
    pb = p.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pe = total - pb;
    return out;
  }
  if (p.auto_pad == "VALID") pb = pe = 0;
  const int64_t numer = in + pb + pe - span;
  if (numer < 0)
    user_error(
        "{}: the window (kernel {}, dilation {}) spans {} elements but spatial axis {} has "
        "only {} with pads {}+{}",
        n.label(), p.kernel[i], p.dilations[i], span, i, in, pb, pe);
  if (!p.ceil_mode) return numer / s + 1;
  int64_t out = (numer + s - 1) / s + 1;
  // A last window that would start in the end padding is dropped (as ONNX Runtime does).
  if ((out - 1) * s >= in + pb) --out;
  return out;
}

std::vector<Dim> window_output_dims(WindowParams p, const std::vector<Dim>& in, const Node& n) {
  std::vector<Dim> out;
  for (size_t i = 0; i < in.size(); ++i)
    out.push_back(in[i].known() ? Dim(window_output(p, static_cast<int64_t>(i), in[i].value, n))
                                : Dim());
  return out;
}

Geometry3 make_geometry3(const WindowParams& p, const Shape& in_spatial, const Shape& out_spatial,
                         const Node& n) {
  const int64_t r = p.rank();
  if (r > 3 || r < 1)
    user_error("{}: {} spatial axes are not supported (expected 1 to 3)", n.label(), r);
  Geometry3 g;
  const int64_t off = 3 - r;
  for (int64_t i = 0; i < r; ++i) {
    g.in[off + i] = in_spatial[i];
    g.out[off + i] = out_spatial[i];
    g.k[off + i] = p.kernel[i];
    g.s[off + i] = p.strides[i];
    g.d[off + i] = p.dilations[i];
    g.pb[off + i] = p.pads[i];
    g.pe[off + i] = p.pads[r + i];
  }
  return g;
}

std::vector<uint32_t> subtract_zero_point(const Node& n, const Tensor& t, const Tensor& zp,
                                          int64_t axis_size, int64_t stride, const char* what) {
  const DType dt = t.dtype();
  if (dt != DType::kUInt8 && dt != DType::kInt8)
    user_error("{}: {} must be uint8 or int8, got {}", n.label(), what, describe(t));
  std::vector<int64_t> z{0};
  if (zp.defined()) {
    if (zp.dtype() != dt)
      user_error("{}: the zero point of {} must have its type {}, got {}", n.label(), what,
                 dtype_name(dt), describe(zp));
    z = zp.to_int64s();
    if (z.size() != 1 && static_cast<int64_t>(z.size()) != axis_size)
      user_error("{}: the zero point of {} must have 1 or {} elements, got {}", n.label(), what,
                 axis_size, describe(zp));
  }
  const std::vector<int64_t> v = t.to_int64s();
  std::vector<uint32_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t zi = z.size() == 1 ? z[0] : z[(static_cast<int64_t>(i) / stride) % axis_size];
    out[i] = static_cast<uint32_t>(v[i] - zi);
  }
  return out;
}

int64_t static_numel(const TensorType& t) {
  if (!t.has_rank || !t.is_static()) return -1;
  return shape_numel(t.static_shape());
}

}  // namespace yoloc
