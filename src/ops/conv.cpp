// Convolutions: Conv, ConvInteger (uint8/int8 with zero points, int32 output) and ConvTranspose.
// The references lower to im2col (col2im for ConvTranspose) and one GEMM per image and group,
// accumulating in float for 16/32-bit floats, double for float64 and int32 for ConvInteger.
#include "ops/nn_common.h"
#include "ops/op_common.h"

namespace yoloc {

namespace {

/// Spatial kernel of a Conv-like node: kernel_shape, else W's trailing dims when known. Returns
/// false when it cannot be known at compile time.
bool conv_kernel(const Node& n, const TensorType& w, int64_t spatial, std::vector<int64_t>* k) {
  if (n.attrs.has("kernel_shape")) {
    *k = ints_attr(n, "kernel_shape", static_cast<size_t>(spatial), 1);
    return true;
  }
  k->clear();
  if (!w.has_rank) return false;
  for (int64_t i = 2; i < w.rank(); ++i) {
    if (!w.dims[i].known()) return false;
    k->push_back(w.dims[i].value);
  }
  return true;
}

/// Checks what Conv, ConvInteger and ConvTranspose share: ranks of X and W, group.
int64_t check_conv_inputs(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  const TensorType& w = ctx.type(1);
  if (x.has_rank && x.rank() < 3)
    ctx.fail("input X must have rank >= 3 (N, C, spatial...), got {}", x.str());
  if (x.has_rank && w.has_rank && w.rank() != x.rank())
    ctx.fail("weight W {} must have the rank of X {}", w.str(), x.str());
  const int64_t group = ctx.attrs().get_int("group", 1);
  if (group < 1) ctx.fail("group must be >= 1, got {}", group);
  return group;
}

std::vector<TensorType> infer_conv(const InferContext& ctx, DType out_dtype) {
  const TensorType& x = ctx.type(0);
  const TensorType& w = ctx.type(1);
  const int64_t group = check_conv_inputs(ctx);
  if (!x.has_rank) return {TensorType::unranked(out_dtype)};
  const int64_t spatial = x.rank() - 2;
  const Dim& c = x.dims[1];
  if (c.known() && c.value % group != 0)
    ctx.fail("input channels {} are not divisible by group {}", c.value, group);
  if (c.known() && w.has_rank && w.dims[1].known() && w.dims[1].value * group != c.value)
    ctx.fail("weight {} expects {} input channels (W[1] * group {}), but X {} has {}", w.str(),
             w.dims[1].value * group, group, x.str(), c.value);
  std::vector<Dim> dims{x.dims[0], w.has_rank ? w.dims[0] : Dim()};
  std::vector<int64_t> kernel;
  if (conv_kernel(ctx.node, w, spatial, &kernel)) {
    const std::vector<Dim> in(x.dims.begin() + 2, x.dims.end());
    for (const Dim& d : window_output_dims(window_params(ctx.node, kernel), in, ctx.node))
      dims.push_back(d);
  } else {
    dims.resize(static_cast<size_t>(x.rank()));
  }
  return {TensorType(out_dtype, dims)};
}

/// Copies the windows of x (C x g.in) into col (C*k_size x out_size), padding with zeros.
template <typename T>
void im2col(const T* x, int64_t C, const Geometry3& g, T* col) {
  const int64_t osz = g.out_size();
  for (int64_t c = 0; c < C; ++c) {
    const T* xc = x + c * g.in_size();
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
          T* dst = col + (((c * g.k[0] + k0) * g.k[1] + k1) * g.k[2] + k2) * osz;
          // Along the innermost axis, ow in [lo, hi) reads iw = ow * s + off2 inside the input;
          // the rest is padding.
          const int64_t off2 = k2 * g.d[2] - g.pb[2];
          int64_t lo = off2 >= 0 ? 0 : (-off2 + g.s[2] - 1) / g.s[2];
          int64_t hi = g.in[2] - off2 <= 0 ? 0 : (g.in[2] - off2 + g.s[2] - 1) / g.s[2];
          lo = std::min(lo, g.out[2]);
          hi = std::max(lo, std::min(hi, g.out[2]));
          for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
            const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1, dst += g.out[2]) {
              const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
              if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1]) {
                std::fill(dst, dst + g.out[2], T(0));
                continue;
              }
              const T* src = xc + (i0 * g.in[1] + i1) * g.in[2] + off2;
              std::fill(dst, dst + lo, T(0));
              if (g.s[2] == 1) {
                std::copy(src + lo, src + hi, dst + lo);
              } else {
                for (int64_t o = lo; o < hi; ++o) dst[o] = src[o * g.s[2]];
              }
              std::fill(dst + hi, dst + g.out[2], T(0));
            }
          }
        }
  }
}

/// y (N x M x out) = conv(x (N x C x in), w (M x C/group x k)) + bias (M or null), in Acc.
template <typename Acc>
void conv_core(const Geometry3& g, int64_t N, int64_t C, int64_t M, int64_t group, const Acc* x,
               const Acc* w, const Acc* bias, Acc* y) {
  const int64_t cg = C / group, mg = M / group;
  const int64_t K = cg * g.k_size();
  const int64_t osz = g.out_size();
  const bool pointwise = g.k_size() == 1 && g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1 &&
                         g.pb[0] == 0 && g.pb[1] == 0 && g.pb[2] == 0 && osz == g.in_size();
  std::vector<Acc> col(pointwise ? 0 : static_cast<size_t>(K * osz));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t gr = 0; gr < group; ++gr) {
      const Acc* xg = x + (n * C + gr * cg) * g.in_size();
      const Acc* b = xg;
      if (!pointwise) {
        im2col(xg, cg, g, col.data());
        b = col.data();
      }
      Acc* yg = y + (n * M + gr * mg) * osz;
      for (int64_t m = 0; m < mg; ++m)
        std::fill(yg + m * osz, yg + (m + 1) * osz, bias ? bias[gr * mg + m] : Acc(0));
      gemm_accumulate<Acc>(mg, osz, K, w + gr * mg * K, K, b, osz, yg, osz);
    }
}

/// The data of t as Acc: t's own buffer when T is Acc, else a converted copy in `storage`.
template <typename T, typename Acc>
const Acc* as_acc(const Tensor& t, std::vector<Acc>& storage) {
  if constexpr (std::is_same_v<T, Acc>) {
    return t.data<T>();
  } else {
    const T* p = t.data<T>();
    storage.resize(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) storage[i] = static_cast<Acc>(static_cast<float>(p[i]));
    return storage.data();
  }
}

/// Shapes and geometry of a Conv/ConvInteger evaluation, checked against the actual tensors.
struct ConvSetup {
  Geometry3 g;
  int64_t N = 0, C = 0, M = 0, group = 1;
  Shape out_shape;
};

ConvSetup conv_setup(const Node& n, const Tensor& x, const Tensor& w) {
  ConvSetup s;
  if (x.rank() < 3 || w.rank() != x.rank())
    user_error("{}: expected X of rank >= 3 and W of the same rank, got {} and {}", n.label(),
               describe(x), describe(w));
  s.N = x.dim(0);
  s.C = x.dim(1);
  s.M = w.dim(0);
  s.group = n.attrs.get_int("group", 1);
  if (s.group < 1 || s.C % s.group != 0 || s.M % s.group != 0 || w.dim(1) * s.group != s.C)
    user_error("{}: X {} and W {} do not match group {}", n.label(), describe(x), describe(w),
               s.group);
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  if (n.attrs.has("kernel_shape") &&
      ints_attr(n, "kernel_shape", kernel.size(), 1) != std::vector<int64_t>(kernel))
    user_error("{}: kernel_shape disagrees with W {}", n.label(), describe(w));
  WindowParams p = window_params(n, kernel);
  const Shape in(x.shape().begin() + 2, x.shape().end());
  Shape out;
  for (int64_t i = 0; i < p.rank(); ++i) out.push_back(window_output(p, i, in[i], n));
  s.g = make_geometry3(p, in, out, n);
  s.out_shape = {s.N, s.M};
  s.out_shape.insert(s.out_shape.end(), out.begin(), out.end());
  return s;
}

std::vector<Tensor> conv_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor& b = in.size() > 2 ? in[2] : Tensor();
  if (w.dtype() != x.dtype() || (b.defined() && b.dtype() != x.dtype()))
    user_error("{}: X, W and B must share one element type, got {}, {} and {}", n.label(),
               describe(x), describe(w), b.defined() ? describe(b) : "none");
  const ConvSetup s = conv_setup(n, x, w);
  if (b.defined() && b.numel() != s.M)
    user_error("{}: bias {} must have {} elements", n.label(), describe(b), s.M);
  Tensor y(x.dtype(), s.out_shape);
  dispatch_float(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
        std::vector<Acc> xs, ws, bs, ys;
        const Acc* bp = b.defined() ? as_acc<T, Acc>(b, bs) : nullptr;
        Acc* yp;
        if constexpr (std::is_same_v<T, Acc>) {
          yp = y.data<T>();
        } else {
          ys.resize(static_cast<size_t>(y.numel()));
          yp = ys.data();
        }
        conv_core<Acc>(s.g, s.N, s.C, s.M, s.group, as_acc<T, Acc>(x, xs), as_acc<T, Acc>(w, ws),
                       bp, yp);
        if constexpr (!std::is_same_v<T, Acc>) {
          T* out = y.data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) out[i] = static_cast<T>(ys[i]);
        }
      },
      n.label());
  return {y};
}

std::vector<Tensor> conv_integer_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const ConvSetup s = conv_setup(n, x, w);
  const Tensor xz = in.size() > 2 ? in[2] : Tensor();
  const Tensor wz = in.size() > 3 ? in[3] : Tensor();
  // Zero points are subtracted before padding, so padded positions contribute 0, as if the
  // input had been padded with its zero point.
  const std::vector<uint32_t> xs = subtract_zero_point(n, x, xz, 1, 1, "input X");
  const std::vector<uint32_t> ws =
      subtract_zero_point(n, w, wz, s.M, s.M ? w.numel() / s.M : 1, "weight W");
  Tensor y(DType::kInt32, s.out_shape);
  std::vector<uint32_t> acc(static_cast<size_t>(y.numel()));
  conv_core<uint32_t>(s.g, s.N, s.C, s.M, s.group, xs.data(), ws.data(), nullptr, acc.data());
  int32_t* out = y.data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<int32_t>(acc[i]);
  return {y};
}

int64_t conv_flops(const Node& n) {
  const int64_t out = static_numel(n.outputs[0]->type);
  const int64_t w = static_numel(n.inputs[1]->type);
  if (out < 0 || w < 0 || !n.inputs[1]->type.dims[0].known() ||
      n.inputs[1]->type.dims[0].value == 0)
    return 0;
  // Each output element takes one MAC per weight of its output channel.
  return 2 * out * (w / n.inputs[1]->type.dims[0].value);
}

OpDef conv_def() {
  OpDef d;
  d.name = "Conv";
  d.traits = kTraitAnchor | kTraitLayoutSensitive;
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.doc = "N-D convolution (1-D to 3-D) with groups, strides, dilations, pads and auto_pad";
  d.infer = [](const InferContext& ctx) {
    const DType t = ctx.type(0).dtype;
    if (!is_float(t)) ctx.fail("X must be a float tensor, got {}", ctx.type(0).str());
    if (ctx.type(1).dtype != t) ctx.fail("W {} must have X's element type", ctx.type(1).str());
    return infer_conv(ctx, t);
  };
  d.reference = conv_reference;
  d.flops = conv_flops;
  return d;
}

OpDef conv_integer_def() {
  OpDef d;
  d.name = "ConvInteger";
  d.traits = kTraitAnchor | kTraitLayoutSensitive | kTraitQuant;
  d.min_inputs = 2;
  d.max_inputs = 4;
  d.doc = "convolution of (x - x_zero_point) and (w - w_zero_point) in int32";
  d.infer = [](const InferContext& ctx) {
    for (size_t i = 0; i < 2; ++i) {
      const DType t = ctx.type(i).dtype;
      if (t != DType::kUInt8 && t != DType::kInt8)
        ctx.fail("input {} must be uint8 or int8, got {}", i, ctx.type(i).str());
    }
    return infer_conv(ctx, DType::kInt32);
  };
  d.reference = conv_integer_reference;
  d.flops = conv_flops;
  return d;
}

// ---- ConvTranspose ----

/// Resolved ConvTranspose geometry: output sizes and begin pads per spatial axis.
struct TransposeGeometry {
  std::vector<int64_t> out, pads_begin;
};

/// Output size and pads of each spatial axis; unknown (-1) where an input size is unknown.
TransposeGeometry transpose_geometry(const Node& n, const std::vector<int64_t>& kernel,
                                     const std::vector<int64_t>& in) {
  const size_t r = kernel.size();
  WindowParams p = window_params(n, kernel);
  const std::vector<int64_t> out_pad = ints_attr(n, "output_padding", r, 0);
  std::vector<int64_t> out_shape;
  if (n.attrs.has("output_shape")) {
    out_shape = n.attrs.get_ints("output_shape");
    // Some exporters give N and C as well; the spatial sizes are the trailing ones.
    if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (out_shape.size() != r)
      user_error("{}: output_shape has {} values, expected {}", n.label(), out_shape.size(), r);
  }
  const bool same = p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER";
  TransposeGeometry t;
  for (size_t i = 0; i < r; ++i) {
    if (out_pad[i] < 0 || out_pad[i] >= std::max(p.strides[i], p.dilations[i]))
      user_error("{}: output_padding {} must be in [0, max(stride, dilation))", n.label(),
                 out_pad[i]);
    if (in[i] < 0) {
      t.out.push_back(out_shape.empty() ? -1 : out_shape[i]);
      t.pads_begin.push_back(0);
      continue;
    }
    const int64_t full =
        p.strides[i] * (in[i] - 1) + out_pad[i] + (kernel[i] - 1) * p.dilations[i] + 1;
    int64_t pb = p.auto_pad == "VALID" ? 0 : p.pads[i];
    int64_t pe = p.auto_pad == "VALID" ? 0 : p.pads[r + i];
    int64_t out;
    if (!out_shape.empty() || same) {
      out = out_shape.empty() ? in[i] * p.strides[i] : out_shape[i];
      // A negative total (output_shape beyond the full result) pads the end with zeros; floor
      // division keeps the begin pad at 0 then, as ONNX specifies.
      const int64_t total = full - out;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pb = p.auto_pad == "SAME_UPPER" ? half : total - half;
      pe = total - pb;
    } else {
      out = full - pb - pe;
    }
    if (out < 1)
      user_error("{}: spatial axis {} would have output size {} (input {}, pads {}+{})", n.label(),
                 i, out, in[i], pb, pe);
    t.out.push_back(out);
    t.pads_begin.push_back(pb);
  }
  return t;
}

std::vector<TensorType> infer_conv_transpose(const InferContext& ctx) {
  const TensorType& x = ctx.type(0);
  const TensorType& w = ctx.type(1);
  const int64_t group = check_conv_inputs(ctx);
  if (!is_float(x.dtype) || w.dtype != x.dtype)
    ctx.fail("X and W must be float tensors of one type, got {} and {}", x.str(), w.str());
  if (!x.has_rank) return {TensorType::unranked(x.dtype)};
  const int64_t spatial = x.rank() - 2;
  Dim c_out;
  if (w.has_rank && w.dims[1].known()) c_out = Dim(w.dims[1].value * group);
  std::vector<Dim> dims{x.dims[0], c_out};
  std::vector<int64_t> kernel;
  if (conv_kernel(ctx.node, w, spatial, &kernel)) {
    std::vector<int64_t> in;
    for (int64_t i = 2; i < x.rank(); ++i) in.push_back(x.dims[i].known() ? x.dims[i].value : -1);
    for (int64_t o : transpose_geometry(ctx.node, kernel, in).out)
      dims.push_back(o >= 0 ? Dim(o) : Dim());
  } else {
    dims.resize(static_cast<size_t>(x.rank()));
  }
  return {TensorType(x.dtype, dims)};
}

/// Adds col (C*k_size x in_size: one row per channel and kernel offset) into y (C x out_size):
/// the adjoint of im2col, with g.in/g.out describing the convolution that ConvTranspose inverts
/// (g.in = ConvTranspose output, g.out = ConvTranspose input).
template <typename T>
void col2im_add(const T* col, int64_t C, const Geometry3& g, T* y) {
  const int64_t osz = g.out_size();
  for (int64_t c = 0; c < C; ++c) {
    T* yc = y + c * g.in_size();
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
          const T* src = col + (((c * g.k[0] + k0) * g.k[1] + k1) * g.k[2] + k2) * osz;
          for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
            const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1, src += g.out[2]) {
              const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
              if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1]) continue;
              T* dst = yc + (i0 * g.in[1] + i1) * g.in[2];
              for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
                const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                if (i2 >= 0 && i2 < g.in[2]) dst[i2] += src[o2];
              }
            }
          }
        }
  }
}

std::vector<Tensor> conv_transpose_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor& b = in.size() > 2 ? in[2] : Tensor();
  if (x.rank() < 3 || w.rank() != x.rank() || w.dtype() != x.dtype() ||
      (b.defined() && b.dtype() != x.dtype()))
    user_error("{}: expected X, W (same rank >= 3) and B of one type, got {}, {}, {}", n.label(),
               describe(x), describe(w), b.defined() ? describe(b) : "none");
  const int64_t N = x.dim(0), C = x.dim(1), group = n.attrs.get_int("group", 1);
  if (group < 1 || C % group != 0 || w.dim(0) != C)
    user_error("{}: X {} and W {} do not match group {}", n.label(), describe(x), describe(w),
               group);
  const int64_t mg = w.dim(1), M = mg * group, cg = C / group;
  if (b.defined() && b.numel() != M)
    user_error("{}: bias {} must have {} elements", n.label(), describe(b), M);
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  const std::vector<int64_t> in_sp(x.shape().begin() + 2, x.shape().end());
  const TransposeGeometry tg = transpose_geometry(n, kernel, in_sp);
  WindowParams p = window_params(n, kernel);
  for (size_t i = 0; i < kernel.size(); ++i) p.pads[i] = tg.pads_begin[i];
  // The convolution this op is the adjoint of maps the output (g.in) to the input (g.out).
  const Geometry3 g = make_geometry3(p, tg.out, in_sp, n);
  Shape out_shape{N, M};
  out_shape.insert(out_shape.end(), tg.out.begin(), tg.out.end());
  Tensor y(x.dtype(), out_shape);
  dispatch_float(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
        std::vector<Acc> xs, ws, bs;
        const Acc* xp = as_acc<T, Acc>(x, xs);
        const Acc* wp = as_acc<T, Acc>(w, ws);
        const Acc* bp = b.defined() ? as_acc<T, Acc>(b, bs) : nullptr;
        const int64_t rows = mg * g.k_size();  // col rows per group: output channel x kernel offset
        const int64_t isz = g.out_size(), osz = g.in_size();
        std::vector<Acc> wt(static_cast<size_t>(rows * cg)), col(static_cast<size_t>(rows * isz));
        std::vector<Acc> acc(static_cast<size_t>(y.numel()));
        for (int64_t gr = 0; gr < group; ++gr) {
          // W[gr] is cg x rows; the GEMM wants its transpose (rows x cg).
          const Acc* wg = wp + gr * cg * rows;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < rows; ++r) wt[r * cg + c] = wg[c * rows + r];
          for (int64_t nn = 0; nn < N; ++nn) {
            std::fill(col.begin(), col.end(), Acc(0));
            gemm_accumulate<Acc>(rows, isz, cg, wt.data(), cg, xp + (nn * C + gr * cg) * isz, isz,
                                 col.data(), isz);
            Acc* yg = acc.data() + (nn * M + gr * mg) * osz;
            col2im_add(col.data(), mg, g, yg);
            if (bp)
              for (int64_t m = 0; m < mg; ++m)
                for (int64_t i = 0; i < osz; ++i) yg[m * osz + i] += bp[gr * mg + m];
          }
        }
        T* out = y.data<T>();
        for (int64_t i = 0; i < y.numel(); ++i) out[i] = static_cast<T>(acc[i]);
      },
      n.label());
  return {y};
}

OpDef conv_transpose_def() {
  OpDef d;
  d.name = "ConvTranspose";
  d.traits = kTraitAnchor | kTraitLayoutSensitive;
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.doc = "transposed convolution (1-D to 3-D) with output_padding and output_shape";
  d.infer = infer_conv_transpose;
  d.reference = conv_transpose_reference;
  d.flops = [](const Node& n) -> int64_t {
    const int64_t x = static_numel(n.inputs[0]->type);
    const int64_t w = static_numel(n.inputs[1]->type);
    const TensorType& xt = n.inputs[0]->type;
    if (x < 0 || w < 0 || !xt.dims[1].known() || xt.dims[1].value == 0) return 0;
    // Each input element scatters one MAC per weight of its input channel.
    return 2 * x * (w / xt.dims[1].value);
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(conv_def());
YOLOC_REGISTER_OP(conv_integer_def());
YOLOC_REGISTER_OP(conv_transpose_def());

}  // namespace yoloc
