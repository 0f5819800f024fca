#pragma once
/// Helpers shared by the anchor ops (Conv, ConvTranspose, pools, MatMul/Gemm): sliding-window
/// geometry (kernel, strides, dilations, pads, auto_pad, ceil_mode) and the reference GEMM loop.
#include <algorithm>
#include <string>
#include <vector>

#include "ir/op_registry.h"

namespace yoloc {

/// The sliding-window attributes of a Conv/pool node, validated against its spatial rank.
struct WindowParams {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  ///< begins of every axis, then ends (resolved by window_output)
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;

  int64_t rank() const { return static_cast<int64_t>(kernel.size()); }
};

/// Reads strides/dilations/pads/auto_pad/ceil_mode of `n` for a window of `kernel` (its spatial
/// rank); raises a UserError naming the node when an attribute has the wrong length or value.
WindowParams window_params(const Node& n, std::vector<int64_t> kernel);

/// Output size of spatial axis i for an input of size `in` (Conv/pool arithmetic). Resolves
/// auto_pad into p.pads[i] and p.pads[rank + i]. Raises a UserError naming the node when the
/// window does not fit.
int64_t window_output(WindowParams& p, int64_t i, int64_t in, const Node& n);

/// window_output over dims that may be unknown: unknown input dims give unknown output dims.
std::vector<Dim> window_output_dims(WindowParams p, const std::vector<Dim>& in, const Node& n);

/// Spatial geometry padded to 3-D (leading axes of size 1), so one loop nest serves 1-D, 2-D
/// and 3-D windows.
struct Geometry3 {
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1};
  int64_t d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0};  ///< pads at the beginning of each axis
  int64_t pe[3] = {0, 0, 0};  ///< pads at the end of each axis

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

/// Geometry3 of a window over `in_spatial` (at most 3 axes) with output sizes `out_spatial`;
/// p.pads must be resolved. Raises a UserError naming the node for more than 3 spatial axes.
Geometry3 make_geometry3(const WindowParams& p, const Shape& in_spatial, const Shape& out_spatial,
                         const Node& n);

/// C[M,N] += A[M,K] * B[K,N]; row-major with row strides lda, ldb, ldc. Blocked over N and K and
/// ordered i-k-j so that the inner loop runs over contiguous rows the compiler vectorises.
template <typename T>
void gemm_accumulate(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                     int64_t ldb, T* C, int64_t ldc) {
  constexpr int64_t kBlockN = 256;
  constexpr int64_t kBlockK = 128;
  for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
    const int64_t nb = std::min(kBlockN, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
      const int64_t kb = std::min(kBlockK, K - k0);
      for (int64_t i = 0; i < M; ++i) {
        T* __restrict c = C + i * ldc + j0;
        const T* a = A + i * lda + k0;
        for (int64_t k = 0; k < kb; ++k) {
          const T av = a[k];
          const T* __restrict b = B + (k0 + k) * ldb + j0;
          for (int64_t j = 0; j < nb; ++j) c[j] += av * b[j];
        }
      }
    }
  }
}

/// Reads an int attribute list of `n` that must have `count` entries (or be absent: `dflt`
/// repeated); raises a UserError naming the node otherwise.
std::vector<int64_t> ints_attr(const Node& n, const char* name, size_t count, int64_t dflt);

/// Values of a uint8/int8 tensor minus its zero point (ConvInteger, MatMulInteger): one zero point,
/// or one per index of an axis of size `axis_size` whose stride in the flat data is `stride`.
/// The result is uint32 so that a GEMM over it wraps like ONNX Runtime's int32 accumulators
/// without signed overflow; cast the sums back to int32. Raises a UserError naming the node and
/// `what` for a wrong type or zero-point size.
std::vector<uint32_t> subtract_zero_point(const Node& n, const Tensor& t, const Tensor& zp,
                                          int64_t axis_size, int64_t stride, const char* what);

/// Product of the known dims of a static type's shape; -1 if the type is not static.
int64_t static_numel(const TensorType& t);

}  // namespace yoloc
