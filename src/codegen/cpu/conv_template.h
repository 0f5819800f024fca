#pragma once
/// The CPU kernel template of the fused "Conv (+bias) (+ReLU/SiLU) (+residual Add)" group: a
/// direct convolution over activations in the blocked layout NCHW16c (what the layout_selection
/// pass picks for target "cpu"), fp32, register-tiled over output channel blocks and output
/// columns, specialised for the task's static shapes and its ISA (AVX-512 intrinsics, or vector
/// extensions for AVX2 / NEON / generic; the layout is NCHW16c for all of them).
///
/// Tensors as the generated kernel sees them (batch N, channel blocks of 16, zero padded):
///   input    [N][C/16][H][W][16], or plain NCHW [N][C][H][W] when C < 16
///   output   [N][K/16][OH][OW][16], or plain NCHW [N][K][OH][OW] when K < 16 (the residual
///            has the output's layout)
///   weights  what pack_weights makes: [ceil(K/16)/OCB][ceil(C/16)][KH][KW][min(C,16)][OCB][16]
///   bias     [ceil(K/16) * 16] (zeros when the node has none and past K)
/// The first conv of a YOLO (3 input channels) is served by the same kernel reading the model's
/// NCHW input directly (a blocked copy would be 16/3 times larger); its inner channel loop runs
/// over the 3 real channels only. A conv to fewer than 16 channels (the box and objectness
/// heads of a detector) computes one zero-padded block and stores its first K lanes.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpu/isa.h"
#include "codegen/cpu/schedule.h"
#include "ir/graph.h"

namespace yoloc::codegen::cpu {

/// Activation applied after the bias (before the residual add).
enum class Activation { kNone, kRelu, kSilu };

/// The workload of one fused conv group: static 2-D shapes (batch n) and the epilogue.
struct ConvTask {
  int64_t n = 1, c = 0, h = 0, w = 0;  ///< input
  int64_t k = 0, oh = 0, ow = 0;       ///< output channels and size
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;  ///< window (pads: top/left)
  Activation act = Activation::kNone;
  bool residual = false;  ///< adds a tensor of the output's shape after the activation
  int64_t groups = 1;     ///< Conv's `group` (channels split into this many independent convs)
  CpuIsa isa = detect_host_isa();  ///< what the kernel is generated for

  /// Canonical workload key, e.g.
  /// "conv2d_nchw16c_f32 n1 c64 h80 w80 k64 3x3 s1x1 p1x1 d1x1 silu add avx512".
  std::string key() const;
  /// Multiply-adds times two (an output of a grouped conv reads C / groups input channels).
  double flops() const { return 2.0 * n * k * oh * ow * (c / groups) * kh * kw; }
  /// Builds the output size from the input size and window (ONNX Conv arithmetic, symmetric
  /// pads of ph/pw at both ends).
  static ConvTask make(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t kernel,
                       int64_t stride, int64_t pad, Activation act = Activation::kNone,
                       bool residual = false);
};

/// The conv task of a fused group (an anchor group whose anchor is a Conv with its epilogue in
/// the order bias, activation, residual Add), or nullopt when the group has another form
/// (1-D/3-D, non-float, unknown dims, asymmetric pads, other epilogue ops). Grouped convs are
/// returned with `groups` set; ConvTemplate takes groups == 1, DwConvTemplate depthwise ones.
std::optional<ConvTask> conv_task_from_group(const Graph& g, const FusedGroup& group);

/// One generated kernel: source text of one extern "C" function
///   void symbol(const float* in, const float* w, const float* bias, const float* res,
///               float* out, int64_t begin, int64_t end);
/// which computes work items [begin, end) of `work_items` (disjoint items write disjoint
/// outputs, so threads may split the range freely).
struct CpuKernel {
  std::string symbol;
  std::string source;
  int64_t work_items = 0;
};

/// The conv template. Knobs: "ocb" (output channel blocks per register tile), "owb" (output
/// columns per register tile), "ict" (input channel blocks per cache tile: a row's column tiles
/// all run over one slice of the weights before the next, partial sums going through the output),
/// "order" (0: channel groups outer, rows inner; 1: rows
/// outer), "unroll" (unroll factor of the inner channel loop).
class ConvTemplate {
 public:
  /// True when the kernel can compute the task: groups 1, C a multiple of 16 or below 16, K a
  /// multiple of 16 or below 16.
  static bool matches(const ConvTask& t);
  /// The knobs and their domains for t.
  static ScheduleSpace space(const ConvTask& t);
  /// True when cfg is a point of space(t) that the kernel can run: ocb divides ceil(K/16), ict
  /// covers all input channel blocks when K < 16, the tile
  /// (ocb x owb accumulators, ocb weights, one input) fits t.isa's vector registers (32 zmm;
  /// 16 ymm or 32 q at 2 or 4 per 16-float vector), owb <= OW.
  static bool valid(const ConvTask& t, const ScheduleConfig& cfg);
  /// A heuristic config that is always valid for a matching task.
  static ScheduleConfig default_config(const ConvTask& t);
  /// The kernel source; `symbol` names its function (a C identifier). Raises InternalError
  /// when the task does not match or the config is not valid.
  static CpuKernel emit(const ConvTask& t, const ScheduleConfig& cfg, const std::string& symbol);
  /// Packs OIHW fp32 weights (K*C*KH*KW floats) into the kernel's layout for cfg.
  static std::vector<float> pack_weights(const ConvTask& t, const ScheduleConfig& cfg,
                                         const float* oihw);
};

/// The vector operations the conv kernels are written in for isa (source text: yc_vec, one
/// 16-float block, with yc_load / yc_store / yc_set1 / yc_zero / yc_fma / yc_add and the
/// activations yc_none / yc_relu / yc_silu) and the namespace they live in.
std::pair<std::string, std::string> vector_prelude(CpuIsa isa);

/// NCHW -> NCHW16c (channels zero-padded to a multiple of 16).
std::vector<float> to_nchw16c(const float* x, int64_t n, int64_t c, int64_t h, int64_t w);
/// NCHW16c -> NCHW (drops the padding channels).
std::vector<float> from_nchw16c(const float* x, int64_t n, int64_t c, int64_t h, int64_t w);

}  // namespace yoloc::codegen::cpu
