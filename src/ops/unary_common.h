#pragma once
/// Helpers shared by the one-input elementwise op families (unary math, activations): the element
/// type sets ONNX allows, and OpDef builders whose reference kernels map every element.
#include <type_traits>

#include "ops/op_common.h"

namespace yoloc {

/// The element types an op accepts.
enum class TypeSet {
  kFloat,    ///< float32, float16, bfloat16, float64
  kSigned,   ///< floats and signed integers
  kNumeric,  ///< floats and all integers
  kBool,     ///< bool only
  kAll,      ///< every type
};

/// True when `t` belongs to `s`.
inline bool dtype_in(DType t, TypeSet s) {
  if (t == DType::kUndefined) return false;
  switch (s) {
    case TypeSet::kFloat: return is_float(t);
    case TypeSet::kSigned: return is_float(t) || (is_integer(t) && is_signed(t));
    case TypeSet::kNumeric: return t != DType::kBool;
    case TypeSet::kBool: return t == DType::kBool;
    case TypeSet::kAll: return true;
  }
  return false;
}

/// Words for a TypeSet in messages.
inline const char* typeset_name(TypeSet s) {
  switch (s) {
    case TypeSet::kFloat: return "a float type (float32, float16, bfloat16, float64)";
    case TypeSet::kSigned: return "a float or signed integer type";
    case TypeSet::kNumeric: return "a numeric type";
    case TypeSet::kBool: return "bool";
    case TypeSet::kAll: return "a defined element type (is the input missing?)";
  }
  return "";
}

/// Raises a UserError naming the node when input i's element type is not in `s`.
inline void require_types(const InferContext& ctx, size_t i, TypeSet s) {
  if (!dtype_in(ctx.type(i).dtype, s))
    ctx.fail("input {} must have {}, got {}", i, typeset_name(s), ctx.type(i).str());
}

/// out[i] = f(in[i]) with input element type T and output element type Out.
template <typename Out, typename T, typename F>
Tensor map_elements(const Tensor& in, F f) {
  Tensor out(dtype_of<Out>(), in.shape());
  const T* p = in.data<T>();
  Out* o = out.data<Out>();
  for (int64_t i = 0; i < in.numel(); ++i) o[i] = f(p[i]);
  return out;
}

/// The C++ types of the elements of a float tensor: math happens in double and rounds once.
template <typename T>
constexpr bool kIsFloatElem = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                              std::is_same_v<T, BFloat16>;

/// An elementwise one-input op over the types in `types`. `make(node)` is called once per run
/// and returns a generic callable `f(T x) -> T`, invoked with the C++ element type (Half and
/// BFloat16 included).
template <typename Make>
OpDef typed_unary(const char* name, const char* doc, TypeSet types, Make make) {
  OpDef d;
  d.name = name;
  d.traits = kTraitElementwise;
  d.doc = doc;
  d.infer = [types](const InferContext& ctx) {
    require_types(ctx, 0, types);
    return infer_same_as_input0(ctx);
  };
  d.reference = [types, make](const Node& n, const std::vector<Tensor>& in) {
    if (!dtype_in(in[0].dtype(), types))
      user_error("{}: input must have {}, got {}", n.label(), typeset_name(types),
                 describe(in[0]));
    auto f = make(n);
    return dispatch_all(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      return std::vector<Tensor>{map_elements<T, T>(in[0], [&](T x) -> T { return f(x); })};
    });
  };
  return d;
}

/// An elementwise one-input op over float types whose math is `double -> double`: `make(node)`
/// returns that function (reading the node's attributes once).
template <typename Make>
OpDef float_unary(const char* name, const char* doc, Make make) {
  return typed_unary(name, doc, TypeSet::kFloat, [make](const Node& n) {
    auto f = make(n);
    return [f](auto x) {
      using T = decltype(x);
      return static_cast<T>(f(static_cast<double>(x)));
    };
  });
}

/// A `make` for ops without attributes: always returns f.
template <typename F>
auto no_attrs(F f) {
  return [f](const Node&) { return f; };
}

/// float_unary for a function without attributes.
template <typename F>
OpDef float_unary_fn(const char* name, const char* doc, F f) {
  return float_unary(name, doc, no_attrs(f));
}

}  // namespace yoloc
