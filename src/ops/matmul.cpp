// Matrix products: MatMul (numpy batch broadcasting, 1-D operands), MatMulInteger (uint8/int8
// with zero points, int32 output) and Gemm (transA/transB, alpha, beta, broadcast C).
#include "ops/nn_common.h"
#include "ops/op_common.h"

namespace yoloc {

namespace {

/// Accumulation type: float for 16/32-bit floats, double for float64; integers accumulate in
/// uint64_t, whose wrap-around is defined and equals two's-complement wrap once cast back.
template <typename T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double,
                                 std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;

/// Shapes of a MatMul: batch shapes of A and B (as given), and M, K, N after promoting 1-D
/// operands; `out` is the output shape with the promoted axes removed again.
struct MatMulShape {
  Shape a_batch, b_batch, batch, out;
  int64_t M = 1, K = 1, N = 1;
};

MatMulShape matmul_shape(const Node& n, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    user_error("{}: MatMul operands must have rank >= 1, got {} and {}", n.label(), shape_str(a),
               shape_str(b));
  MatMulShape s;
  const size_t ra = a.size(), rb = b.size();
  s.M = ra >= 2 ? a[ra - 2] : 1;
  s.K = a[ra - 1];
  const int64_t kb = rb >= 2 ? b[rb - 2] : b[0];
  s.N = rb >= 2 ? b[rb - 1] : 1;
  if (s.K != kb)
    user_error("{}: inner dimensions differ: A {} has {} columns but B {} has {} rows", n.label(),
               shape_str(a), s.K, shape_str(b), kb);
  s.a_batch = ra > 2 ? Shape(a.begin(), a.end() - 2) : Shape{};
  s.b_batch = rb > 2 ? Shape(b.begin(), b.end() - 2) : Shape{};
  s.batch = broadcast_shape({s.a_batch, s.b_batch}, n);
  s.out = s.batch;
  if (ra >= 2) s.out.push_back(s.M);
  if (rb >= 2) s.out.push_back(s.N);
  return s;
}

std::vector<TensorType> infer_matmul(const InferContext& ctx, DType out) {
  const TensorType& a = ctx.type(0);
  const TensorType& b = ctx.type(1);
  if (!a.has_rank || !b.has_rank) return {TensorType::unranked(out)};
  if (a.rank() < 1 || b.rank() < 1)
    ctx.fail("operands must have rank >= 1, got {} and {}", a.str(), b.str());
  const Dim& ka = a.dims.back();
  const Dim& kb = b.rank() >= 2 ? b.dims[b.dims.size() - 2] : b.dims[0];
  if (ka.known() && kb.known() && ka.value != kb.value)
    ctx.fail("inner dimensions differ: A {} has {} columns but B {} has {} rows", a.str(), ka.value,
             b.str(), kb.value);
  TensorType ab(a.dtype, a.rank() > 2 ? std::vector<Dim>(a.dims.begin(), a.dims.end() - 2)
                                      : std::vector<Dim>{});
  TensorType bb(b.dtype, b.rank() > 2 ? std::vector<Dim>(b.dims.begin(), b.dims.end() - 2)
                                      : std::vector<Dim>{});
  std::vector<Dim> dims = broadcast_dims({&ab, &bb}, ctx.node);
  if (a.rank() >= 2) dims.push_back(a.dims[a.dims.size() - 2]);
  if (b.rank() >= 2) dims.push_back(b.dims.back());
  return {TensorType(out, dims)};
}

/// out (batch x M x N) = A x B per broadcast batch entry, all in Acc.
template <typename Acc>
void batched_gemm(const MatMulShape& s, const Acc* a, const Acc* b, Acc* out) {
  const int64_t mk = s.M * s.K, kn = s.K * s.N, mn = s.M * s.N;
  std::fill(out, out + shape_numel(s.batch) * mn, Acc(0));
  for_each_broadcast(s.batch, {s.a_batch, s.b_batch}, [&](int64_t o, const int64_t* off) {
    gemm_accumulate<Acc>(s.M, s.N, s.K, a + off[0] * mk, s.K, b + off[1] * kn, s.N, out + o * mn,
                         s.N);
  });
}

template <typename T, typename Acc>
std::vector<Acc> to_acc(const Tensor& t) {
  const T* p = t.data<T>();
  std::vector<Acc> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_integral_v<T>)
      v[i] = static_cast<Acc>(p[i]);
    else
      v[i] = static_cast<Acc>(static_cast<AccOf<T>>(p[i]));
  }
  return v;
}

std::vector<Tensor> matmul_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  if (a.dtype() != b.dtype())
    user_error("{}: A and B must have one element type, got {} and {}", n.label(), describe(a),
               describe(b));
  const MatMulShape s = matmul_shape(n, a.shape(), b.shape());
  Tensor y(a.dtype(), s.out);
  dispatch_numeric(
      a.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = AccOf<T>;
        const std::vector<Acc> av = to_acc<T, Acc>(a), bv = to_acc<T, Acc>(b);
        std::vector<Acc> acc(static_cast<size_t>(y.numel()));
        batched_gemm<Acc>(s, av.data(), bv.data(), acc.data());
        T* out = y.data<T>();
        for (int64_t i = 0; i < y.numel(); ++i) out[i] = static_cast<T>(acc[i]);
      },
      n.label());
  return {y};
}

int64_t matmul_flops(const Node& n) {
  const int64_t out = static_numel(n.outputs[0]->type);
  const TensorType& a = n.inputs[0]->type;
  if (out < 0 || !a.has_rank || a.rank() < 1 || !a.dims.back().known()) return 0;
  return 2 * out * a.dims.back().value;
}

OpDef matmul_def() {
  OpDef d;
  d.name = "MatMul";
  d.traits = kTraitAnchor;
  d.min_inputs = d.max_inputs = 2;
  d.doc = "matrix product with numpy batch broadcasting (1-D operands are promoted)";
  d.infer = [](const InferContext& ctx) {
    if (ctx.type(0).dtype != ctx.type(1).dtype || ctx.type(0).dtype == DType::kBool)
      ctx.fail("A and B must have one numeric element type, got {} and {}", ctx.type(0).str(),
               ctx.type(1).str());
    return infer_matmul(ctx, ctx.type(0).dtype);
  };
  d.reference = matmul_reference;
  d.flops = matmul_flops;
  return d;
}

std::vector<Tensor> matmul_integer_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  const MatMulShape s = matmul_shape(n, a.shape(), b.shape());
  const Tensor az = in.size() > 2 ? in[2] : Tensor();
  const Tensor bz = in.size() > 3 ? in[3] : Tensor();
  const std::vector<uint32_t> av = subtract_zero_point(n, a, az, s.M, s.K, "input A");
  const std::vector<uint32_t> bv = subtract_zero_point(n, b, bz, s.N, 1, "input B");
  std::vector<uint32_t> acc(static_cast<size_t>(shape_numel(s.out)));
  batched_gemm<uint32_t>(s, av.data(), bv.data(), acc.data());
  Tensor y(DType::kInt32, s.out);
  int32_t* out = y.data<int32_t>();
  for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<int32_t>(acc[i]);
  return {y};
}

OpDef matmul_integer_def() {
  OpDef d;
  d.name = "MatMulInteger";
  d.traits = kTraitAnchor | kTraitQuant;
  d.min_inputs = 2;
  d.max_inputs = 4;
  d.doc = "(A - a_zero_point) x (B - b_zero_point) in int32, MatMul broadcasting";
  d.infer = [](const InferContext& ctx) {
    for (size_t i = 0; i < 2; ++i) {
      const DType t = ctx.type(i).dtype;
      if (t != DType::kUInt8 && t != DType::kInt8)
        ctx.fail("input {} must be uint8 or int8, got {}", i, ctx.type(i).str());
    }
    return infer_matmul(ctx, DType::kInt32);
  };
  d.reference = matmul_integer_reference;
  d.flops = matmul_flops;
  return d;
}

// ---- Gemm ----

std::vector<TensorType> infer_gemm(const InferContext& ctx) {
  const TensorType& a = ctx.type(0);
  const TensorType& b = ctx.type(1);
  if (!is_float(a.dtype) || b.dtype != a.dtype ||
      (ctx.has_input(2) && ctx.type(2).dtype != a.dtype))
    ctx.fail("A, B and C must be float tensors of one type, got {}, {} and {}", a.str(), b.str(),
             ctx.has_input(2) ? ctx.type(2).str() : "none");
  if (!a.has_rank || !b.has_rank) return {TensorType(a.dtype, {Dim(), Dim()})};
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("A and B must be matrices, got {} and {}", a.str(), b.str());
  const bool ta = ctx.attrs().get_int("transA", 0) != 0;
  const bool tb = ctx.attrs().get_int("transB", 0) != 0;
  const Dim& ka = a.dims[ta ? 0 : 1];
  const Dim& kb = b.dims[tb ? 1 : 0];
  if (ka.known() && kb.known() && ka.value != kb.value)
    ctx.fail("inner dimensions differ: A {} (transA={}) and B {} (transB={})", a.str(), ta, b.str(),
             tb);
  return {TensorType(a.dtype, {a.dims[ta ? 1 : 0], b.dims[tb ? 0 : 1]})};
}

/// A matrix (rows x cols after the optional transpose) in Acc, row-major.
template <typename T, typename Acc>
std::vector<Acc> gemm_operand(const Tensor& t, bool trans) {
  const int64_t r = t.dim(0), c = t.dim(1);
  const T* p = t.data<T>();
  std::vector<Acc> v(static_cast<size_t>(r * c));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      v[trans ? j * r + i : i * c + j] = static_cast<Acc>(p[i * c + j]);
  return v;
}

std::vector<Tensor> gemm_reference(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  const Tensor& c = in.size() > 2 ? in[2] : Tensor();
  if (a.rank() != 2 || b.rank() != 2 || b.dtype() != a.dtype() ||
      (c.defined() && c.dtype() != a.dtype()))
    user_error("{}: expected matrices A, B and C of one type, got {}, {}, {}", n.label(),
               describe(a), describe(b), c.defined() ? describe(c) : "none");
  const bool ta = n.attrs.get_int("transA", 0) != 0;
  const bool tb = n.attrs.get_int("transB", 0) != 0;
  const int64_t M = a.dim(ta ? 1 : 0), K = a.dim(ta ? 0 : 1);
  const int64_t N = b.dim(tb ? 0 : 1);
  if (b.dim(tb ? 1 : 0) != K)
    user_error("{}: inner dimensions differ: A {} (transA={}) and B {} (transB={})", n.label(),
               describe(a), ta, describe(b), tb);
  if (c.defined()) broadcast_shape({c.shape(), {M, N}}, n);
  if (c.defined() && c.rank() > 2)
    user_error("{}: C {} must broadcast to [{}, {}]", n.label(), describe(c), M, N);
  const float alpha = n.attrs.get_float("alpha", 1.0f);
  const float beta = n.attrs.get_float("beta", 1.0f);
  Tensor y(a.dtype(), {M, N});
  dispatch_float(
      a.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = AccOf<T>;
        const std::vector<Acc> av = gemm_operand<T, Acc>(a, ta), bv = gemm_operand<T, Acc>(b, tb);
        std::vector<Acc> acc(static_cast<size_t>(M * N), Acc(0));
        gemm_accumulate<Acc>(M, N, K, av.data(), K, bv.data(), N, acc.data(), N);
        T* out = y.data<T>();
        for (int64_t i = 0; i < M * N; ++i) acc[i] *= static_cast<Acc>(alpha);
        if (c.defined()) {
          const T* cp = c.data<T>();
          for_each_broadcast({M, N}, {c.shape()}, [&](int64_t o, const int64_t* off) {
            acc[o] += static_cast<Acc>(beta) * static_cast<Acc>(cp[off[0]]);
          });
        }
        for (int64_t i = 0; i < M * N; ++i) out[i] = static_cast<T>(acc[i]);
      },
      n.label());
  return {y};
}

OpDef gemm_def() {
  OpDef d;
  d.name = "Gemm";
  d.traits = kTraitAnchor;
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.doc = "alpha * A' x B' + beta * C (A', B' optionally transposed; C broadcasts)";
  d.infer = infer_gemm;
  d.reference = gemm_reference;
  d.flops = [](const Node& n) -> int64_t {
    const int64_t out = static_numel(n.outputs[0]->type);
    const TensorType& a = n.inputs[0]->type;
    if (out < 0 || !a.is_static() || a.rank() != 2) return 0;
    return 2 * out * a.dims[n.attrs.get_int("transA", 0) != 0 ? 0 : 1].value;
  };
  return d;
}

}  // namespace

YOLOC_REGISTER_OP(matmul_def());
YOLOC_REGISTER_OP(matmul_integer_def());
YOLOC_REGISTER_OP(gemm_def());

}  // namespace yoloc
