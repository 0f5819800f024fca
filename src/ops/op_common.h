#pragma once
/// Helpers shared by the op definitions: axis handling, broadcasting for inference and for the
/// reference kernels, and OpDef builders.
#include <functional>
#include <vector>

#include "ir/op_registry.h"

namespace yoloc {

/// Normalises a possibly negative axis into [0, rank); raises a UserError naming the node.
int64_t normalize_axis(int64_t axis, int64_t rank, const Node& n);

/// Normalises an axis in [-rank, max_axis] (e.g. max_axis = rank for Flatten's split point);
/// raises a UserError naming the node.
int64_t normalize_axis_upto(int64_t axis, int64_t rank, int64_t max_axis, const Node& n);

/// Multidirectional (numpy) broadcast of dims for inference; unknown dims stay unknown, a
/// symbolic dim broadcast with 1 stays symbolic. Raises a UserError on incompatible known dims.
std::vector<Dim> broadcast_dims(const std::vector<const TensorType*>& types, const Node& n);
/// Broadcast of concrete shapes; raises a UserError naming the node when incompatible.
Shape broadcast_shape(const std::vector<Shape>& shapes, const Node& n);

/// Calls f(out_index, in_offsets) for every element of `out` (row-major), where in_offsets[k] is
/// the flat index into input k broadcast to `out`.
void for_each_broadcast(const Shape& out, const std::vector<Shape>& ins,
                        const std::function<void(int64_t, const int64_t*)>& f);

/// One sliced axis: the first element, the step and the element count.
struct SliceAxis {
  int64_t axis, start, step, count;
};

/// Normalises Slice's parameters against the input shape exactly as the ONNX spec says
/// (negative starts/ends count from the end; then clamped to [0, dim] for positive steps and to
/// [0, dim - 1] / [-1, dim - 1] for negative ones). `shape` entries < 0 are unknown dims: their
/// axes get count -1.
std::vector<SliceAxis> slice_axes(const Node& n, const Shape& shape, const Tensor& starts,
                                  const Tensor& ends, const Tensor* axes_t, const Tensor* steps_t);

/// Inference for ops whose single output has the type of input 0.
std::vector<TensorType> infer_same_as_input0(const InferContext& ctx);

/// Copies a strided view of `in` into a new contiguous tensor of shape `out_shape`: the output
/// element at (i0, i1, ...) is in's flat element `offset + sum(ik * strides[k])`. Transpose,
/// Slice, Expand and DepthToSpace are such views; strides may be 0 (broadcast) or negative.
/// The caller guarantees that every addressed element lies inside `in`.
Tensor copy_strided(const Tensor& in, const Shape& out_shape, const std::vector<int64_t>& strides,
                    int64_t offset = 0);

/// The dim an element of a symbolic shape value stands for: a known size >= 0, a symbol, or
/// unknown (also for negative values, whose meaning is op-specific).
Dim sym_to_dim(const SymElem& e);
/// The symbolic element of a dim (unknown dims give an element that is neither known nor named).
SymElem dim_to_sym(const Dim& d);

/// Requires input i to be known at compile time (a constant) or raises a UserError saying so.
const Tensor& require_constant(const InferContext& ctx, size_t i, const char* what);

}  // namespace yoloc
