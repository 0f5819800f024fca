// Ops that change a tensor's shape or layout without computing: Reshape, Flatten, Squeeze,
// Unsqueeze, Expand, Transpose, DepthToSpace, SpaceToDepth.
#include <algorithm>
#include <numeric>
#include <set>

#include "core/checked.h"
#include "ops/op_common.h"

namespace yoloc {

namespace {

/// The product of dims as one dim: known when all are, the symbol when exactly one is a symbol
/// and the others are 1, else unknown.
Dim dims_product(const std::vector<Dim>& dims) {
  int64_t p = 1;
  std::string symbol;
  bool unknown = false;
  for (const Dim& d : dims) {
    if (d.known()) {
      p *= d.value;
    } else if (!d.symbol.empty() && symbol.empty()) {
      symbol = d.symbol;
    } else {
      unknown = true;
    }
  }
  if (unknown) return Dim();
  if (symbol.empty()) return Dim(p);
  return p == 1 ? Dim::sym(symbol) : Dim();
}

/// Reshape's output dims from its target (0 copies the input dim unless allowzero, -1 is
/// inferred). `in` may be null (unranked input). The -1 is inferred when the known parts of
/// both sides are known and their symbols cancel out.
std::vector<Dim> reshape_dims(const InferContext& ctx, const std::vector<SymElem>& target,
                              const TensorType& in, bool allowzero) {
  std::vector<Dim> out;
  int infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    const SymElem& e = target[i];
    if (!e.value) {
      out.push_back(sym_to_dim(e));
    } else if (*e.value == -1) {
      if (infer_at >= 0) ctx.fail("the shape may hold at most one -1");
      infer_at = static_cast<int>(i);
      out.push_back(Dim());
    } else if (*e.value < -1) {
      ctx.fail("shape element {} is {}; expected -1 or a dim >= 0", i, *e.value);
    } else if (*e.value == 0 && !allowzero) {
      if (in.has_rank && static_cast<int64_t>(i) >= in.rank())
        ctx.fail("shape element {} is 0 (copy the input dim) but the input {} has no dim {}", i,
                 in.str(), i);
      out.push_back(in.has_rank ? in.dims[i] : Dim());
    } else {
      out.push_back(Dim(*e.value));
    }
  }
  if (!in.has_rank) return out;
  // Compare both sides: known parts multiply, symbols must cancel.
  int64_t in_known = 1, out_known = 1;
  std::multiset<std::string> syms;
  bool unknown = false;
  for (const Dim& d : in.dims) {
    if (d.known())
      in_known = checked_mul(in_known, d.value, ctx.node.label() + ": the input's size");
    else if (!d.symbol.empty())
      syms.insert(d.symbol);
    else
      unknown = true;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const Dim& d = out[i];
    if (static_cast<int>(i) == infer_at) continue;
    if (d.known()) {
      out_known = checked_mul(out_known, d.value, ctx.node.label() + ": the new shape's size");
    } else if (!d.symbol.empty() && syms.count(d.symbol)) {
      syms.erase(syms.find(d.symbol));
    } else {
      unknown = true;
    }
  }
  if (unknown || !syms.empty()) return out;
  if (infer_at >= 0) {
    if (out_known == 0 || in_known % out_known != 0)
      ctx.fail("cannot reshape {} to {}: the -1 cannot be inferred", in.str(),
               TensorType(in.dtype, out).str());
    out[static_cast<size_t>(infer_at)] = Dim(in_known / out_known);
  } else if (in_known != out_known) {
    ctx.fail("cannot reshape {} to {}: element counts differ", in.str(),
             TensorType(in.dtype, out).str());
  }
  return out;
}

OpDef make_reshape() {
  OpDef d;
  d.name = "Reshape";
  d.traits = kTraitInjective | kTraitReshape;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "the data with another shape (0 copies an input dim unless allowzero, -1 is inferred)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& in = ctx.type(0);
    const bool allowzero = ctx.attrs().get_int("allowzero", 0) != 0;
    if (const auto target = ctx.symbolic(1))
      return std::vector<TensorType>{
          TensorType(in.dtype, reshape_dims(ctx, *target, in, allowzero))};
    const TensorType& s = ctx.type(1);
    if (s.has_rank && s.rank() == 1 && s.dims[0].known())
      return std::vector<TensorType>{
          TensorType(in.dtype, std::vector<Dim>(static_cast<size_t>(s.dims[0].value), Dim()))};
    return std::vector<TensorType>{TensorType::unranked(in.dtype)};
  };
  d.infer_symbolic = [](const InferContext& ctx) -> std::optional<std::vector<SymElem>> {
    // A one-element shape value keeps its element through [] <-> [1] reshapes.
    return ctx.symbolic(0);
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& s = in[1];
    if (s.rank() != 1) user_error("{}: the shape must be 1-D, got {}", n.label(), describe(s));
    const std::vector<int64_t> target = s.to_int64s();
    const bool allowzero = n.attrs.get_int("allowzero", 0) != 0;
    Shape out;
    int64_t known = 1;
    int infer_at = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      int64_t v = target[i];
      if (v == 0 && !allowzero) {
        if (static_cast<int64_t>(i) >= in[0].rank())
          user_error("{}: shape element {} is 0 but the input {} has no dim {}", n.label(), i,
                     describe(in[0]), i);
        v = in[0].shape()[i];
      }
      if (v == -1) {
        if (infer_at >= 0)
          user_error("{}: the shape {} holds two -1", n.label(), shape_str(target));
        infer_at = static_cast<int>(i);
      } else if (v < 0) {
        user_error("{}: invalid shape {}", n.label(), shape_str(target));
      } else {
        known *= v;
        if (known > (int64_t{1} << 40))
          user_error("{}: shape {} is too large", n.label(), shape_str(target));
      }
      out.push_back(v);
    }
    if (infer_at >= 0) {
      if (known == 0 || in[0].numel() % known != 0)
        user_error("{}: cannot reshape {} to {}", n.label(), describe(in[0]), shape_str(target));
      out[static_cast<size_t>(infer_at)] = in[0].numel() / known;
    }
    if (shape_numel(out) != in[0].numel())
      user_error("{}: cannot reshape {} to {} (from target {})", n.label(), describe(in[0]),
                 shape_str(out), shape_str(target));
    return std::vector<Tensor>{in[0].reshaped(out)};
  };
  return d;
}

int64_t flatten_axis(const Node& n, int64_t rank) {
  return normalize_axis_upto(n.attrs.get_int("axis", 1), rank, rank, n);
}

OpDef make_flatten() {
  OpDef d;
  d.name = "Flatten";
  d.traits = kTraitInjective | kTraitReshape;
  d.doc = "a 2-D view: dims before axis times dims from axis on";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!t.has_rank) return std::vector<TensorType>{TensorType(t.dtype, {Dim(), Dim()})};
    const auto axis = flatten_axis(ctx.node, t.rank());
    const std::vector<Dim> outer(t.dims.begin(), t.dims.begin() + axis);
    const std::vector<Dim> inner(t.dims.begin() + axis, t.dims.end());
    return std::vector<TensorType>{TensorType(t.dtype, {dims_product(outer), dims_product(inner)})};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Shape& s = in[0].shape();
    const auto axis = flatten_axis(n, in[0].rank());
    const int64_t outer = shape_numel(Shape(s.begin(), s.begin() + axis));
    const int64_t inner = shape_numel(Shape(s.begin() + axis, s.end()));
    return std::vector<Tensor>{in[0].reshaped({outer, inner})};
  };
  return d;
}

/// Axes of Squeeze/Unsqueeze, normalised against `rank`, sorted; duplicates are an error.
std::vector<int64_t> normalized_axes(const Node& n, const std::vector<int64_t>& axes,
                                     int64_t rank) {
  std::vector<int64_t> r;
  for (int64_t a : axes) r.push_back(normalize_axis(a, rank, n));
  std::sort(r.begin(), r.end());
  if (std::adjacent_find(r.begin(), r.end()) != r.end())
    user_error("{}: axes [{}] repeat an axis", n.label(), fmt::join(axes, ", "));
  return r;
}

/// Squeeze's output dims; `axes` null means every dim of size 1. Dims that are not known to be 1
/// make the squeeze of "all size-1 dims" undecidable: nullopt then.
std::optional<std::vector<Dim>> squeeze_dims(const Node& n, const std::vector<Dim>& dims,
                                             const std::vector<int64_t>* axes) {
  std::vector<Dim> out;
  if (!axes) {
    for (const Dim& d : dims) {
      if (!d.known()) return std::nullopt;
      if (d.value != 1) out.push_back(d);
    }
    return out;
  }
  const std::vector<int64_t> ax = normalized_axes(n, *axes, static_cast<int64_t>(dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!std::binary_search(ax.begin(), ax.end(), static_cast<int64_t>(i))) {
      out.push_back(dims[i]);
    } else if (dims[i].known() && dims[i].value != 1) {
      user_error("{}: cannot squeeze axis {} of size {}", n.label(), i, dims[i].value);
    }
  }
  return out;
}

std::vector<Dim> to_dims(const Shape& s) { return std::vector<Dim>(s.begin(), s.end()); }

Shape to_shape(const std::vector<Dim>& dims) {
  Shape s;
  for (const Dim& d : dims) s.push_back(d.value);
  return s;
}

OpDef make_squeeze() {
  OpDef d;
  d.name = "Squeeze";
  d.traits = kTraitInjective | kTraitReshape;
  d.max_inputs = 2;
  d.doc = "removes the size-1 dims listed in axes (all size-1 dims when axes is omitted)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    const Tensor* axes = ctx.value(1);
    if (t.has_rank && (!ctx.has_input(1) || axes)) {
      std::vector<int64_t> ax;
      if (axes) ax = axes->to_int64s();
      if (auto dims = squeeze_dims(ctx.node, t.dims, axes ? &ax : nullptr))
        return std::vector<TensorType>{TensorType(t.dtype, *dims)};
    } else if (t.has_rank && ctx.type(1).has_rank && ctx.type(1).rank() == 1 &&
               ctx.type(1).dims[0].known()) {
      const int64_t rank = t.rank() - ctx.type(1).dims[0].value;
      if (rank < 0) ctx.fail("more axes than the input {} has dims", t.str());
      return std::vector<TensorType>{
          TensorType(t.dtype, std::vector<Dim>(static_cast<size_t>(rank), Dim()))};
    }
    return std::vector<TensorType>{TensorType::unranked(t.dtype)};
  };
  d.infer_symbolic = [](const InferContext& ctx) -> std::optional<std::vector<SymElem>> {
    return ctx.symbolic(0);  // [1] -> []: the one element passes through
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const bool has_axes = in.size() > 1 && in[1].defined();
    std::vector<int64_t> ax;
    if (has_axes) ax = in[1].to_int64s();
    const auto dims = squeeze_dims(n, to_dims(in[0].shape()), has_axes ? &ax : nullptr);
    return std::vector<Tensor>{in[0].reshaped(to_shape(*dims))};
  };
  return d;
}

std::vector<Dim> unsqueeze_dims(const Node& n, const std::vector<Dim>& dims,
                                const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(dims.size() + axes.size());
  const std::vector<int64_t> ax = normalized_axes(n, axes, rank);
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(ax.begin(), ax.end(), i))
      out.push_back(Dim(1));
    else
      out.push_back(dims[next++]);
  }
  return out;
}

OpDef make_unsqueeze() {
  OpDef d;
  d.name = "Unsqueeze";
  d.traits = kTraitInjective | kTraitReshape;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "inserts size-1 dims at the output positions listed in axes";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    const TensorType& at = ctx.type(1);
    if (!t.has_rank) return std::vector<TensorType>{TensorType::unranked(t.dtype)};
    if (const Tensor* axes = ctx.value(1))
      return std::vector<TensorType>{
          TensorType(t.dtype, unsqueeze_dims(ctx.node, t.dims, axes->to_int64s()))};
    if (at.has_rank && at.rank() == 1 && at.dims[0].known())
      return std::vector<TensorType>{TensorType(
          t.dtype, std::vector<Dim>(static_cast<size_t>(t.rank() + at.dims[0].value), Dim()))};
    return std::vector<TensorType>{TensorType::unranked(t.dtype)};
  };
  d.infer_symbolic = [](const InferContext& ctx) -> std::optional<std::vector<SymElem>> {
    return ctx.symbolic(0);  // [] -> [1]: the one element passes through
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const auto dims = unsqueeze_dims(n, to_dims(in[0].shape()), in[1].to_int64s());
    return std::vector<Tensor>{in[0].reshaped(to_shape(dims))};
  };
  return d;
}

/// Expand's target as dims: from its (possibly symbolic) value, else unknown dims of its length.
std::optional<std::vector<Dim>> expand_target(const InferContext& ctx) {
  if (const auto elems = ctx.symbolic(1)) {
    std::vector<Dim> dims;
    for (const SymElem& e : *elems) {
      if (e.value && *e.value < 0) ctx.fail("the shape must not hold negative dims");
      dims.push_back(sym_to_dim(e));
    }
    return dims;
  }
  const TensorType& s = ctx.type(1);
  if (s.has_rank && s.rank() == 1 && s.dims[0].known())
    return std::vector<Dim>(static_cast<size_t>(s.dims[0].value), Dim());
  return std::nullopt;
}

/// Strides of `in` broadcast to `out` (0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const Shape in_st = shape_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : in_st[i];
  return st;
}

OpDef make_expand() {
  OpDef d;
  d.name = "Expand";
  d.traits = kTraitInjective;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "broadcasts the data to a shape (numpy rules, both ways)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    const auto target = expand_target(ctx);
    if (!t.has_rank || !target) return std::vector<TensorType>{TensorType::unranked(t.dtype)};
    const TensorType shape_type(t.dtype, *target);
    return std::vector<TensorType>{
        TensorType(t.dtype, broadcast_dims({&t, &shape_type}, ctx.node))};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    if (in[1].rank() != 1)
      user_error("{}: the shape must be 1-D, got {}", n.label(), describe(in[1]));
    const Shape target = in[1].to_int64s();
    for (int64_t v : target)
      if (v < 0) user_error("{}: invalid shape {}", n.label(), shape_str(target));
    const Shape out = broadcast_shape({in[0].shape(), target}, n);
    return std::vector<Tensor>{copy_strided(in[0], out, broadcast_strides(in[0].shape(), out))};
  };
  return d;
}

std::vector<int64_t> transpose_perm(const Node& n, int64_t rank) {
  std::vector<int64_t> perm;
  if (n.attrs.has("perm")) {
    perm = n.attrs.get_ints("perm");
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(static_cast<size_t>(rank));
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    user_error("{}: perm [{}] is not a permutation of 0..{}", n.label(), fmt::join(perm, ", "),
               rank - 1);
  return perm;
}

/// The transpose of t by perm (output dim i is input dim perm[i]).
Tensor transpose_tensor(const Tensor& t, const std::vector<int64_t>& perm) {
  const Shape st = shape_strides(t.shape());
  Shape out;
  std::vector<int64_t> strides;
  for (int64_t p : perm) {
    out.push_back(t.shape()[static_cast<size_t>(p)]);
    strides.push_back(st[static_cast<size_t>(p)]);
  }
  return copy_strided(t, out, strides);
}

OpDef make_transpose() {
  OpDef d;
  d.name = "Transpose";
  d.traits = kTraitInjective;
  d.doc = "permutes the dims (output dim i is input dim perm[i]; default reverses them)";
  d.infer = [](const InferContext& ctx) {
    const TensorType& t = ctx.type(0);
    if (!t.has_rank) return std::vector<TensorType>{t};
    std::vector<Dim> dims;
    for (int64_t p : transpose_perm(ctx.node, t.rank()))
      dims.push_back(t.dims[static_cast<size_t>(p)]);
    return std::vector<TensorType>{TensorType(t.dtype, dims)};
  };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{transpose_tensor(in[0], transpose_perm(n, in[0].rank()))};
  };
  return d;
}

int64_t blocksize(const Node& n) {
  const int64_t b = n.attrs.get_int("blocksize");
  if (b <= 0) user_error("{}: blocksize must be positive, got {}", n.label(), b);
  return b;
}

bool crd_mode(const Node& n) {
  const std::string mode = n.attrs.get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    user_error("{}: mode must be 'DCR' or 'CRD', got '{}'", n.label(), mode);
  return mode == "CRD";
}

/// Dim d divided (to_space) or multiplied by f; unknown when not known.
Dim scale_dim(const Dim& d, int64_t mul, int64_t div, const InferContext& ctx, const char* what) {
  if (!d.known()) return Dim();
  if (d.value % div != 0) ctx.fail("{} {} is not divisible by {}", what, d.value, div);
  return Dim(d.value / div * mul);
}

/// DepthToSpace (to_space) and SpaceToDepth: channels / b^2 and spatial dims * b, or the inverse.
std::vector<TensorType> infer_block_move(const InferContext& ctx, bool to_space) {
  const TensorType& t = ctx.type(0);
  const int64_t b = blocksize(ctx.node);
  crd_mode(ctx.node);
  if (!t.has_rank) return {TensorType(t.dtype, {Dim(), Dim(), Dim(), Dim()})};
  if (t.rank() != 4) ctx.fail("the input must be 4-D (NCHW), got {}", t.str());
  const int64_t bb = b * b;
  return {TensorType(t.dtype, {t.dims[0],
                               to_space ? scale_dim(t.dims[1], 1, bb, ctx, "channels")
                                        : scale_dim(t.dims[1], bb, 1, ctx, "channels"),
                               to_space ? scale_dim(t.dims[2], b, 1, ctx, "height")
                                        : scale_dim(t.dims[2], 1, b, ctx, "height"),
                               to_space ? scale_dim(t.dims[3], b, 1, ctx, "width")
                                        : scale_dim(t.dims[3], 1, b, ctx, "width")})};
}

OpDef make_depth_to_space() {
  OpDef d;
  d.name = "DepthToSpace";
  d.traits = kTraitInjective | kTraitLayoutSensitive;
  d.doc = "moves channel blocks into spatial blocks (NCHW; DCR or CRD order)";
  d.infer = [](const InferContext& ctx) { return infer_block_move(ctx, /*to_space=*/true); };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const int64_t b = blocksize(n);
    if (x.rank() != 4 || x.dim(1) % (b * b) != 0)
      user_error("{}: expected NCHW input with C divisible by {}, got {}", n.label(), b * b,
                 describe(x));
    const int64_t N = x.dim(0), C = x.dim(1) / (b * b), H = x.dim(2), W = x.dim(3);
    Tensor t = crd_mode(n) ? transpose_tensor(x.reshaped({N, C, b, b, H, W}), {0, 1, 4, 2, 5, 3})
                           : transpose_tensor(x.reshaped({N, b, b, C, H, W}), {0, 3, 4, 1, 5, 2});
    return std::vector<Tensor>{t.reshaped({N, C, H * b, W * b})};
  };
  return d;
}

OpDef make_space_to_depth() {
  OpDef d;
  d.name = "SpaceToDepth";
  d.traits = kTraitInjective | kTraitLayoutSensitive;
  d.doc = "moves spatial blocks into channels (NCHW; DCR or CRD order)";
  d.infer = [](const InferContext& ctx) { return infer_block_move(ctx, /*to_space=*/false); };
  d.reference = [](const Node& n, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const int64_t b = blocksize(n);
    if (x.rank() != 4 || x.dim(2) % b != 0 || x.dim(3) % b != 0)
      user_error("{}: expected NCHW input with H and W divisible by {}, got {}", n.label(), b,
                 describe(x));
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2) / b, W = x.dim(3) / b;
    // The inverse of DepthToSpace's permutations: channel index (b_h, b_w, c) in DCR order,
    // (c, b_h, b_w) in CRD order.
    const Tensor t = transpose_tensor(x.reshaped({N, C, H, b, W, b}),
                                      crd_mode(n) ? std::vector<int64_t>{0, 1, 3, 5, 2, 4}
                                                  : std::vector<int64_t>{0, 3, 5, 1, 2, 4});
    return std::vector<Tensor>{t.reshaped({N, C * b * b, H, W})};
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(make_reshape());
YOLOC_REGISTER_OP(make_flatten());
YOLOC_REGISTER_OP(make_squeeze());
YOLOC_REGISTER_OP(make_unsqueeze());
YOLOC_REGISTER_OP(make_expand());
YOLOC_REGISTER_OP(make_transpose());
YOLOC_REGISTER_OP(make_depth_to_space());
YOLOC_REGISTER_OP(make_space_to_depth());

}  // namespace yoloc
