#pragma once
/// The nearest-neighbour Resize a CUDA conv writes as its upsampled copy (CudaConvTask::up), so
/// that the Resize needs no kernel of its own (the 2x upsamplings of YOLO necks read a conv's
/// output).
#include <optional>
#include <utility>

#include "codegen/cuda/conv_task.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

/// The copy is fused at batch <= this only. Measured on an H200 (CudaGpu.ConvWithUpsampledCopy,
/// yolov8n's two upsampled convs, fp16): at batch 1 the copy adds 0.7-1.2 us to the conv and
/// saves the Resize's launch (about 4 us in a CUDA graph); at batch 32 it adds 29 and 104 us
/// where the Resize kernels take 25 and 60 us: its scattered stores cost more than a pass of its
/// own.
inline constexpr int64_t kUpsampleMaxBatch = 2;
// Above that batch the Resize is fused into its reader instead, where that is a 1x1 conv of the
// concat the Resize writes into (upsampled_input).

/// The integer factors (sh, sw) of a nearest Resize r of a static 4-D NHWC value into one of the
/// same dtype and layout that keeps N and C, where output row o reads row o / sh and column o
/// reads o / sw exactly as its mode, scales and coordinate transformation give them
/// (cpu::nearest_indices); nullopt for any other node.
std::optional<std::pair<int64_t, int64_t>> nearest_factors(const Node& r);

struct UpsampleConsumer {
  const Node* resize = nullptr;  ///< its output is the copy
  CudaConvUp up;
};

/// The first user of the conv output y (at batch <= kUpsampleMaxBatch) that the conv can write as
/// its upsampled copy: a Resize alone in its kernel group reading y, with nearest_factors, whose
/// output lies in a channel slice (channel_slice_of). nullopt when no user is such a Resize.
std::optional<UpsampleConsumer> upsample_consumer(const Graph& g, const Value* y);

struct UpsampledInput {
  const Node* resize = nullptr;   ///< its output is part of the conv's input, never stored
  const Value* source = nullptr;  ///< the Resize's input, which the conv reads instead
  CudaConvUpIn up_in;
};

/// The part of the conv input x (at batch > kUpsampleMaxBatch) that the conv can read from the
/// source of the Resize that writes it: x is a view Concat's output on the channel axis, in slice
/// `in` of its buffer, read by nothing else; one of its inputs is the output of a Resize alone in
/// its kernel group with nearest_factors, read by nothing but the concat, whose source is a
/// static NHWC value of x's dtype in a channel slice (channel_slice_of). The first such input, or
/// nullopt.
std::optional<UpsampledInput> upsampled_input(const Graph& g, const Value* x, ChannelSlice in);

}  // namespace yoloc::codegen::cuda
