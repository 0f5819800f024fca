#pragma once
/// The workload of one fused conv group on CUDA, and what the CUDA conv templates share: the
/// kernel description they emit and the layouts of their operands.
///
/// Activations are NHWC. Each of the input, the residual and the output may be a channel slice of
/// a wider NHWC buffer (a view Split of the input, a view Concat the output is written into): its
/// pixel p, channel c lies at element p * stride + offset + c of the buffer. In NHWC a channel
/// slice is one stride and one offset at any batch size. The output (with its residual) may be
/// NCHW instead (CudaConvTask::out_nchw): there, channel c of pixel p of image i lies at element
/// (i * stride + offset + c) * OH*OW + p, the same stride and offset counted in channel planes.
///
/// Every CUDA conv kernel has the parameters
///   (const void* x, const void* w, const float* bias, const void* res, void* y, void* up)
/// x, res, y and up pointing at element 0 of their buffers (offsets are compiled in), w at the
/// template's packed weights, bias at K float32 values (zeros when the conv has none), res unused
/// (may be null) without a residual, up unused (may be null) without an upsampled copy
/// (CudaConvTask::up). A back-to-back fused pair of the tensor-core template
/// (CudaConvTask::b2b) appends its extra parameters after these (see TensorCoreConvTemplate).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "codegen/cpu/conv_template.h"
#include "core/dtype.h"
#include "yoloc/tensor.h"
#include "ir/graph.h"

namespace yoloc::codegen::cuda {

using cpu::Activation;
using cpu::ConvTask;

/// Where a tensor of `channels` channels lies in an NHWC (or NCHW) buffer (see the file comment).
struct ChannelSlice {
  int64_t stride = 0;  ///< channels per pixel of the buffer
  int64_t offset = 0;  ///< first channel of the slice
  bool operator==(const ChannelSlice& o) const { return stride == o.stride && offset == o.offset; }
};

/// The nearest-neighbour upsampled copy a conv writes besides its output (the Resize reading the
/// conv's output, fused away): output pixel (n, oh, ow) is stored also to the sh x sw pixels
/// (oh * sh + i, ow * sw + j) of an NHWC buffer of (n, k, oh * sh, ow * sw), in channel slice
/// `out` of that buffer (a view Concat the copy is written into), in the output's dtype.
struct CudaConvUp {
  int64_t sh = 1, sw = 1;
  ChannelSlice out;
};

/// Input channels a conv reads as the nearest upsampling of another value (CudaConvTask::up_in:
/// the Resize writing them into the conv's input concat is fused away): channels [c0, c0 + c) of
/// input pixel (n, h, w) are channels [0, c) of pixel (n, h / fh, w / fw) of an NHWC value of
/// (n, c, H / fh, W / fw), which lies in slice `from` of its buffer.
struct CudaConvUpIn {
  int64_t fh = 1, fw = 1;
  int64_t c0 = 0, c = 0;
  ChannelSlice from;
};

/// The second stage of a back-to-back fused pair (the tensor-core template only): a 1x1
/// stride-1 conv, without residual, of the first conv's whole output (K channels, which never
/// reach memory: a block keeps its pixels' row tile in shared memory, rounded to the first
/// stage's out_dtype as the unfused pair stores it) to `k` channels, with bias and activation,
/// written into slice `out` of its buffer, NHWC or NCHW.
struct B2bStage {
  int64_t k = 0;
  Activation act = Activation::kNone;
  DType out_dtype = DType::kFloat16;
  ChannelSlice out;
  bool out_nchw = false;
  Tensor w;     ///< float32 [k, K, 1, 1] (the 1x1 conv's OIHW weights)
  Tensor bias;  ///< float32 [k]
};

/// Where a conv stores the detector's class scores straight into its output (CudaConvTask::scores):
/// the output [N, R, A] of a DFL detect tail (R rows, the anchors of every level side by side)
/// taken as NCHW channel planes of `plane` = A elements, this conv's map starting `base` elements
/// into each plane. The detect tail then only decodes the boxes (DetectTailTask::classes_stored).
struct CudaScoresOut {
  int64_t plane = 0, base = 0;
  bool operator==(const CudaScoresOut& o) const { return plane == o.plane && base == o.base; }
};

struct DetectTailTask;

/// Where a b2b pair stores the detector's boxes instead of its DFL logits (CudaConvTask::boxes):
/// its second stage's output is the S x R box logits of the level of `tail` whose anchors start
/// at `base`; the pair decodes them from its staged output tile with the tail's box unit
/// (detect_box_unit_source) into the tail's output. With the class scores stored too
/// (CudaScoresOut), the detect tail has nothing left to do and is not run.
struct CudaBoxesOut {
  std::shared_ptr<const DetectTailTask> tail;  ///< one DetectTailTemplate::matches takes
  int64_t base = 0;
};

/// A fused conv group for CUDA: shapes and epilogue (bias, activation, residual add) as on the
/// CPU, the storage types, and the placement of each activation in its buffer.
struct CudaConvTask {
  ConvTask conv;
  DType dtype = DType::kFloat16;      ///< input activations and weights
  DType out_dtype = DType::kFloat16;  ///< output and residual
  ChannelSlice in, out, res;
  /// The input is a dense NCHW tensor of `image_dtype` (the network's image input; for the direct
  /// template any dense NCHW value) instead of NHWC `dtype`: the template converts it while
  /// loading its tiles. float32, or float16 / bfloat16 for an artifact compiled with narrow I/O
  /// (--io-precision) or a model whose input is fp16.
  bool in_nchw = false;
  DType image_dtype = DType::kFloat32;
  /// The output and the residual are NCHW (see the file comment): the layout the detect head's
  /// last convs store in, so that the tail kernel reading them walks consecutive pixels
  /// (layout_selection). Bias and activation are per channel as in NHWC.
  bool out_nchw = false;
  /// The target's compute capability as in sm_XX (80, 86, 90, ...): a template uses features of
  /// newer targets only where the task says so (the tensor-core template's split-K clusters need
  /// 90). Not part of the key: records are kept per target architecture.
  int sm = 80;
  /// The upsampled copy, if any (NHWC outputs only, never with b2b: slices_valid refuses it).
  std::optional<CudaConvUp> up;
  /// Input channels read from the value a nearest Resize upsamples (a 1x1 conv of a concat one of
  /// whose parts is that Resize's output, tensor-core template only): the Resize has no kernel
  /// and its part of the concat is never stored.
  std::optional<CudaConvUpIn> up_in;
  /// Set for a back-to-back fused pair: this conv, then the 1x1 conv of `b2b` on its output. `out`
  /// then describes the intermediate (dense, NHWC), the kernel's y the second stage's output.
  std::optional<B2bStage> b2b;
  /// Set when the task's output (a b2b pair's: its second stage's) is the detector's class
  /// scores: sigmoid after bias (the conv itself has no activation), stored NCHW (out_nchw) with
  /// channel c of pixel p of image i at element (i * out.stride + out.offset + c) * plane + base +
  /// p of the detector's output, out.stride its rows and out.offset its first class row.
  std::optional<CudaScoresOut> scores;
  /// Set when a b2b pair's second-stage output is a level's DFL box logits, which it decodes into
  /// the detector's boxes (CudaBoxesOut): its staged epilogue only (epi=1), the logits rounded to
  /// b2b->out_dtype as the unfused pair stores them. The kernel takes the tail's table after the
  /// pair's parameters and its y is the detector's output.
  std::optional<CudaBoxesOut> boxes;

  /// A task on dense NHWC tensors (slices as wide as the tensors).
  static CudaConvTask dense(const ConvTask& conv, DType dtype, DType out_dtype);
  /// True when every slice holds its tensor: offset >= 0, offset + channels <= stride; an
  /// upsampled copy has scales >= 1 and an NHWC output; an upsampled input has factors >= 1 that
  /// divide the input's height and width and lies within the input's channels.
  bool slices_valid() const;
  /// The second stage of a b2b pair as a task of its own (the 1x1 conv reading the intermediate,
  /// dense, stored as out_dtype): what the unfused pair would run second.
  CudaConvTask second_stage() const;
  /// Canonical workload key, e.g. "cuda_conv2d_nhwc f16->f16 n1 c64 h80 w80 k64 3x3 s1x1 p1x1
  /// d1x1 silu add in64+0 out128+64 res64+0", with " in-nchw-f32" (or -f16, -bf16: the image's
  /// type) / " out-nchw" / " up2x2 out256+128" (the upsampled copy: scales, its slice) appended for
  /// those forms: an NCHW output or an upsampled copy stores in another pattern, so it is tuned on
  /// its own. A b2b pair appends " b2b k2=<k> <act> -><dtype> out<stride>+<offset>" (and " nchw"
  /// for an NCHW second output): it is tuned apart from the lone first conv. An upsampled input
  /// appends " upin<c0>+<c> <fh>x<fw> from<stride>+<offset>". Class scores append
  /// " scores<base>/<plane>", boxes " boxes<base>/<anchors> -><output dtype>".
  std::string key() const;
};

/// The key of the same conv writing only its NHWC output for the key of one writing NCHW
/// (" out-nchw") or an upsampled copy too (" up<sh>x<sw> out<stride>+<offset>", anywhere in the
/// key: a template's suffix may follow), else nullopt. Compile applies the twin's tuned config to
/// such a conv without records of its own: the main loop, which the config shapes, is the same;
/// only the stores differ.
std::optional<std::string> nhwc_output_twin(const std::string& key);

/// The CUDA conv task of a fused group (see cpu::conv_task_from_group for the forms taken) with
/// activations stored as `dtype` and the output as `out_dtype`, and the channel slices that the
/// views of the graph give: an output written into a view Concat on the channel axis (nested
/// concats too), an input or residual read from a view Split or step-1 Slice on the channel axis
/// (of a buffer that may itself be a concat slice). nullopt when the group is not such a conv or a
/// view is of another form.
std::optional<CudaConvTask> cuda_conv_task_from_group(const Graph& g, const FusedGroup& group,
                                                      DType dtype, DType out_dtype);

/// Where the 4-D value v lies in the buffer it is stored in, per the views of the graph: a slice
/// of a view Concat's buffer on the channel axis (nested concats too), of a view Split's or step-1
/// Slice's input, else the whole of its own buffer ({channels, 0}). nullopt for a value that is
/// not 4-D with static channels or a view of another form.
std::optional<ChannelSlice> channel_slice_of(const Graph& g, const Value* v);

/// One generated kernel: the source of one extern "C" __global__ function `symbol` with the
/// parameters of the file comment, and its launch geometry.
struct CudaKernel {
  std::string symbol;
  std::string source;
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  /// The thread-block cluster shape (sm_90 and up), which the kernel declares itself
  /// (YC_CLUSTER_DIMS), so that a plain launch makes the clusters; the grid is a multiple of it.
  std::array<unsigned, 3> cluster{1, 1, 1};
  unsigned shared_bytes = 0;  ///< dynamic shared memory (above 48 KiB the kernel must opt in)
  /// The kernel walks the tiles of grid x in a grid-stride loop (gridDim.x apart): the launch
  /// may cap grid x at the blocks the GPU holds at once (occupancy x multiprocessors).
  bool persistent = false;
};

/// Shared memory a kernel may use on every target yoloc compiles for (sm_80 and up: sm_86 and
/// sm_89 allow the least, 99 KiB).
inline constexpr int64_t kMaxSharedBytes = 99 * 1024;

/// Shared memory a block may opt in to on sm_XX: 227 KiB on sm_90 and sm_100, 163 KiB on sm_80
/// and sm_87, kMaxSharedBytes elsewhere (CUDA programming guide, "Compute capabilities").
inline constexpr int64_t max_shared_bytes(int sm) {
  return sm == 90 || sm == 100 ? 227 * 1024 : sm == 80 || sm == 87 ? 163 * 1024 : kMaxSharedBytes;
}

/// "f32", "f16", "bf16" (the dtypes the CUDA templates store); "?" otherwise.
const char* short_dtype_name(DType t);
/// True for the dtypes the CUDA templates store activations in: fp32, fp16, bf16.
bool is_storage_dtype(DType t);

/// t's OIHW float32 weights transposed to tap-major rows, as the direct and depthwise templates
/// read them: [(C / groups) * KH * KW][KP], row = tap (c, kh, kw) in OIHW's order, KP = K
/// rounded up to a multiple of `row_multiple` with zeros, so that a block's output channels of
/// one tap are contiguous.
Tensor tap_major_weights(const cpu::ConvTask& t, const float* oihw, int64_t row_multiple);

}  // namespace yoloc::codegen::cuda
