// Resize (opset-19 form): nearest, linear and cubic interpolation over any axes, every
// coordinate_transformation_mode (half_pixel, half_pixel_symmetric, pytorch_half_pixel,
// align_corners, asymmetric, tf_crop_and_resize, and opset 11's tf_half_pixel_for_nn), scales or
// sizes with keep_aspect_ratio_policy, exclude_outside, extrapolation_value and antialias.
//
// The reference follows onnx.reference's separable algorithm: each resized axis in turn maps
// every output index to a few weighted input indices (taps), computed in double.
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "ops/op_common.h"

namespace yoloc {

namespace {

enum class Mode { kNearest, kLinear, kCubic };

struct ResizeAttrs {
  Mode mode = Mode::kNearest;
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  std::string policy = "stretch";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
};

ResizeAttrs resize_attrs(const Node& n) {
  ResizeAttrs a;
  const std::string mode = n.attrs.get_string("mode", "nearest");
  if (mode == "nearest") {
    a.mode = Mode::kNearest;
  } else if (mode == "linear") {
    a.mode = Mode::kLinear;
  } else if (mode == "cubic") {
    a.mode = Mode::kCubic;
  } else {
    user_error("{}: mode '{}' is not one of nearest, linear, cubic", n.label(), mode);
  }
  a.coord = n.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  static const char* const kCoords[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  if (std::find(std::begin(kCoords), std::end(kCoords), a.coord) == std::end(kCoords))
    user_error("{}: coordinate_transformation_mode '{}' is not one of {}", n.label(), a.coord,
               fmt::join(kCoords, ", "));
  a.nearest = n.attrs.get_string("nearest_mode", "round_prefer_floor");
  if (a.nearest != "round_prefer_floor" && a.nearest != "round_prefer_ceil" &&
      a.nearest != "floor" && a.nearest != "ceil")
    user_error(
        "{}: nearest_mode '{}' is not one of round_prefer_floor, round_prefer_ceil, "
        "floor, ceil",
        n.label(), a.nearest);
  a.policy = n.attrs.get_string("keep_aspect_ratio_policy", "stretch");
  if (a.policy != "stretch" && a.policy != "not_larger" && a.policy != "not_smaller")
    user_error("{}: keep_aspect_ratio_policy '{}' is not one of stretch, not_larger, not_smaller",
               n.label(), a.policy);
  a.cubic_a = n.attrs.get_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.attrs.get_int("exclude_outside", 0) != 0;
  a.antialias = n.attrs.get_int("antialias", 0) != 0 && a.mode != Mode::kNearest;
  a.extrapolation = n.attrs.get_float("extrapolation_value", 0.0f);
  return a;
}

/// The resized axes: the axes attribute (normalised) or all of them.
std::vector<int64_t> resize_axes(const Node& n, int64_t rank) {
  std::vector<int64_t> axes;
  if (n.attrs.has("axes")) {
    for (int64_t a : n.attrs.get_ints("axes")) {
      const int64_t x = normalize_axis(a, rank, n);
      if (std::find(axes.begin(), axes.end(), x) != axes.end())
        user_error("{}: axes repeat axis {}", n.label(), x);
      axes.push_back(x);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  return axes;
}

/// A present input: defined and not empty (opset 11 passes empty tensors for unused inputs).
bool given(const Tensor* t) { return t && t->defined() && t->numel() > 0; }

/// Scale and output size of every axis, from scales or sizes (given for `axes`), following
/// keep_aspect_ratio_policy. Unknown input dims (-1) give unknown output sizes.
void resize_plan(const Node& n, const ResizeAttrs& a, const std::vector<int64_t>& in,
                 const std::vector<int64_t>& axes, const Tensor* scales, const Tensor* sizes,
                 std::vector<double>* scale, std::vector<int64_t>* out) {
  const size_t r = in.size();
  scale->assign(r, 1.0);
  *out = in;
  if (given(scales) == given(sizes))
    user_error("{}: exactly one of scales and sizes must be given", n.label());
  const Tensor& t = given(scales) ? *scales : *sizes;
  if (t.rank() != 1 || t.numel() != static_cast<int64_t>(axes.size()))
    user_error("{}: {} {} must be 1-D with one value per resized axis ({})", n.label(),
               given(scales) ? "scales" : "sizes", describe(t), axes.size());
  if (given(scales)) {
    const std::vector<double> s = t.to_doubles();
    for (size_t i = 0; i < axes.size(); ++i) {
      // The scale is a float32 value; the product is exact in double, then floored.
      const double sc = static_cast<float>(s[i]);
      if (!(sc > 0)) user_error("{}: scales must be positive, got {}", n.label(), describe(t));
      (*scale)[axes[i]] = sc;
      const int64_t d = in[axes[i]];
      const double size = std::floor(sc * static_cast<double>(d));
      // An output dim past 2^40 elements cannot be allocated (and past 2^63 not even held).
      if (d >= 0 && !(size < 0x1p40))
        user_error("{}: scale {} of axis {} makes it {:g} long; the scales are corrupt or far too "
                   "large", n.label(), sc, axes[i], size);
      (*out)[axes[i]] = d < 0 ? -1 : static_cast<int64_t>(size);
    }
    return;
  }
  const std::vector<int64_t> s = t.to_int64s();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (s[i] < 0) user_error("{}: sizes must not be negative, got {}", n.label(), describe(t));
    const int64_t d = in[axes[i]];
    (*out)[axes[i]] = s[i];
    (*scale)[axes[i]] = d > 0 ? static_cast<double>(s[i]) / static_cast<double>(d) : 1.0;
  }
  if (a.policy == "stretch") return;
  double k = a.policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
  for (int64_t ax : axes) {
    if (in[ax] < 0) {
      for (int64_t x : axes) (*out)[x] = -1;
      return;
    }
    k = a.policy == "not_larger" ? std::min(k, (*scale)[ax]) : std::max(k, (*scale)[ax]);
  }
  for (int64_t ax : axes) {
    (*scale)[ax] = k;
    (*out)[ax] = static_cast<int64_t>(k * static_cast<double>(in[ax]) + 0.5);
  }
}

std::vector<TensorType> infer_resize(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  if (x.dtype == DType::kBool) ctx.fail("X must be numeric, got {}", x.str());
  if (ctx.has_input(2) && !is_float(ctx.type(2).dtype))
    ctx.fail("scales must be float, got {}", ctx.type(2).str());
  if (ctx.has_input(3) && ctx.type(3).dtype != DType::kInt64)
    ctx.fail("sizes must be int64, got {}", ctx.type(3).str());
  const ResizeAttrs a = resize_attrs(ctx.node);
  if (!x.has_rank) return {x};
  const std::vector<int64_t> axes = resize_axes(ctx.node, x.rank());
  const Tensor* scales = ctx.has_input(2) ? ctx.value(2) : nullptr;
  const Tensor* sizes = ctx.has_input(3) ? ctx.value(3) : nullptr;
  // An input that is present but unknown at compile time leaves the resized dims unknown.
  const bool scales_unknown = ctx.has_input(2) && !scales;
  const bool sizes_unknown = ctx.has_input(3) && !sizes;
  std::vector<Dim> dims = x.dims;
  if (scales_unknown || sizes_unknown) {
    if (!(scales_unknown && given(sizes)) && !(sizes_unknown && given(scales))) {
      for (int64_t ax : axes) dims[ax] = Dim();
      return {TensorType(x.dtype, dims)};
    }
    if (scales_unknown) scales = nullptr;
    if (sizes_unknown) sizes = nullptr;
  }
  std::vector<int64_t> in;
  for (const Dim& d : x.dims) in.push_back(d.known() ? d.value : -1);
  std::vector<double> scale;
  std::vector<int64_t> out;
  resize_plan(ctx.node, a, in, axes, scales, sizes, &scale, &out);
  for (int64_t ax : axes) {
    // A symbolic dim (the batch) survives an identity scale.
    if (!x.dims[ax].known() && given(scales) && scale[ax] == 1.0) continue;
    dims[ax] = out[ax] >= 0 ? Dim(out[ax]) : Dim();
  }
  return {TensorType(x.dtype, dims)};
}

/// One output index along an axis: weighted input indices, or the extrapolation value.
struct Taps {
  std::vector<std::pair<int64_t, double>> taps;
  bool extrapolate = false;
};

/// Input coordinate of output index `x` (onnx.reference's _compute_x_ori); sets *outside for
/// tf_crop_and_resize positions beyond the input.
double source_coordinate(const ResizeAttrs& a, double x, double scale, int64_t in, int64_t out,
                         double roi_start, double roi_end, bool* outside) {
  const double out_w = scale * static_cast<double>(in);  // the un-floored output length
  const double len = static_cast<double>(in);
  *outside = false;
  if (a.coord == "align_corners") return out_w == 1 ? 0.0 : x * (len - 1) / (out_w - 1);
  if (a.coord == "asymmetric") return x / scale;
  if (a.coord == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (a.coord == "pytorch_half_pixel") return out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (a.coord == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out) / out_w;
    const double offset = len / 2 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (a.coord == "tf_crop_and_resize") {
    double v = out_w == 1 ? (roi_end - roi_start) * (len - 1) / 2
                          : x * (roi_end - roi_start) * (len - 1) / (out_w - 1);
    v += roi_start * (len - 1);
    *outside = v < 0 || v > len - 1;
    return v;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

/// Interpolation coefficients for the fractional position `ratio` in (0, 1], for a window of
/// taps starting at floor(x) - n/2 + 1 (onnx.reference's *_coeffs functions).
std::vector<double> coefficients(const ResizeAttrs& a, double ratio, double scale,
                                 bool is_integer) {
  if (a.mode == Mode::kNearest) {
    bool up;  // take the upper of the two taps
    if (is_integer) {
      up = true;
    } else if (a.nearest == "round_prefer_floor") {
      up = ratio > 0.5;
    } else if (a.nearest == "round_prefer_ceil") {
      up = ratio >= 0.5;
    } else {
      up = a.nearest == "ceil";
    }
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  const double A = a.cubic_a;
  if (!a.antialias) {
    if (a.mode == Mode::kLinear) return {1 - ratio, ratio};
    const double r = ratio, s = 1 - ratio;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
            ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
            ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  }
  // Antialiasing widens the kernel by 1/scale when downsampling.
  const double sc = std::min(scale, 1.0);
  std::vector<double> c;
  double sum = 0;
  if (a.mode == Mode::kLinear) {
    const int64_t start = static_cast<int64_t>(std::floor(-1 / sc) + 1);
    for (int64_t i = start; i < 2 - start; ++i)
      c.push_back(std::clamp(1 - std::fabs((static_cast<double>(i) - ratio) * sc), 0.0, 1.0));
  } else {
    const int64_t start = static_cast<int64_t>(std::floor(-2 / sc) + 1);
    for (int64_t i = start; i < 2 - start; ++i) {
      const double x = std::fabs(sc * (static_cast<double>(i) - ratio));
      c.push_back(x <= 1  ? ((A + 2) * x - (A + 3)) * x * x + 1
                  : x < 2 ? ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
                          : 0.0);
    }
  }
  for (double v : c) sum += v;
  for (double& v : c) v /= sum;
  return c;
}

/// Taps of every output index along one axis.
std::vector<Taps> axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale,
                            double roi_start, double roi_end) {
  std::vector<Taps> result(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    Taps& t = result[o];
    bool outside;
    const double x =
        source_coordinate(a, static_cast<double>(o), scale, in, out, roi_start, roi_end, &outside);
    if (outside) {
      t.extrapolate = true;
      continue;
    }
    const double fl = std::floor(x);
    const bool is_integer = x == fl;
    // onnx.reference takes ratio 1 (not 0) at integers, i.e. the window one further left.
    const double ratio = is_integer ? 1.0 : x - fl;
    std::vector<double> c = coefficients(a, ratio, scale, is_integer);
    const int64_t n = static_cast<int64_t>(c.size());
    const int64_t first = static_cast<int64_t>(fl) - n / 2 + (is_integer ? 0 : 1);
    if (a.exclude_outside) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (first + i < 0 || first + i >= in) c[i] = 0;
        sum += c[i];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    for (int64_t i = 0; i < n; ++i)
      if (c[i] != 0) t.taps.emplace_back(std::clamp<int64_t>(first + i, 0, in - 1), c[i]);
  }
  return result;
}

/// Resizes `data` (shape `shape`) along `axis` with the given taps, in place of data.
void resize_axis(std::vector<double>& data, Shape& shape, int64_t axis,
                 const std::vector<Taps>& taps, double extrapolation) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t in = shape[axis], out = static_cast<int64_t>(taps.size());
  std::vector<double> res(static_cast<size_t>(outer * out * inner), 0.0);
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t o = 0; o < out; ++o) {
      double* dst = res.data() + (b * out + o) * inner;
      if (taps[o].extrapolate) {
        std::fill(dst, dst + inner, extrapolation);
        continue;
      }
      for (const auto& [idx, w] : taps[o].taps) {
        const double* src = data.data() + (b * in + idx) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
      }
    }
  data = std::move(res);
  shape[axis] = out;
}

std::vector<Tensor> resize_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const ResizeAttrs a = resize_attrs(n);
  const int64_t r = x.rank();
  const std::vector<int64_t> axes = resize_axes(n, r);
  const Tensor* scales = in.size() > 2 ? &in[2] : nullptr;
  const Tensor* sizes = in.size() > 3 ? &in[3] : nullptr;
  std::vector<double> scale;
  std::vector<int64_t> out;
  resize_plan(n, a, x.shape(), axes, scales, sizes, &scale, &out);
  // roi: starts then ends of the resized axes (tf_crop_and_resize only).
  std::vector<double> roi_start(r, 0.0), roi_end(r, 1.0);
  const bool crop = a.coord == "tf_crop_and_resize";
  if (crop) {
    if (in.size() < 2 || !given(&in[1]))
      user_error("{}: tf_crop_and_resize needs the roi input", n.label());
    const std::vector<double> roi = in[1].to_doubles();
    const size_t k = axes.size();
    if (roi.size() != 2 * k)
      user_error("{}: roi {} must have 2 values per resized axis ({})", n.label(), describe(in[1]),
                 2 * k);
    for (size_t i = 0; i < k; ++i) {
      roi_start[axes[i]] = roi[i];
      roi_end[axes[i]] = roi[k + i];
    }
  }
  for (int64_t ax : axes)
    if (x.dim(ax) == 0 && out[ax] > 0)
      user_error("{}: cannot resize the empty axis {} of {}", n.label(), ax, describe(x));
  std::vector<double> data = x.to_doubles();
  Shape shape = x.shape();
  for (int64_t ax : axes) {
    const bool identity = std::fabs(scale[ax] - 1.0) <= 1e-9 && out[ax] == shape[ax] &&
                          (!crop || (roi_start[ax] == 0.0 && roi_end[ax] == 1.0));
    if (identity) continue;
    resize_axis(data, shape, ax,
                axis_taps(a, shape[ax], out[ax], scale[ax], roi_start[ax], roi_end[ax]),
                a.extrapolation);
  }
  Tensor y(x.dtype(), shape);
  dispatch_numeric(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = y.data<T>();
        for (size_t i = 0; i < data.size(); ++i) {
          if constexpr (std::is_integral_v<T>) {
            const double v = std::nearbyint(data[i]);
            p[i] = static_cast<T>(std::clamp(v, static_cast<double>(std::numeric_limits<T>::min()),
                                             static_cast<double>(std::numeric_limits<T>::max())));
          } else if constexpr (std::is_same_v<T, double>) {
            p[i] = data[i];
          } else {
            p[i] = static_cast<T>(static_cast<float>(data[i]));
          }
        }
      },
      n.label());
  return {y};
}

OpDef resize_def() {
  OpDef d;
  d.name = "Resize";
  d.traits = kTraitAnchor | kTraitLayoutSensitive;
  d.min_inputs = 1;
  d.max_inputs = 4;
  d.doc = "nearest / linear / cubic resize of any axes by scales or to sizes";
  d.infer = infer_resize;
  d.reference = resize_reference;
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(resize_def());

}  // namespace yoloc
