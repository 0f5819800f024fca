#pragma once
/// Post-training int8 quantization of a float graph: QuantizeLinear / DequantizeLinear around
/// the convolutions a calibration chose (src/quant), the graph the reference executor runs to
/// measure what int8 costs before any int8 kernel exists.
#include <map>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace yoloc {

/// How one convolution is quantized: its input activation per tensor (int8 with a zero point),
/// its weights per output channel (symmetric int8, scales from the weights themselves).
struct Int8Conv {
  float input_scale = 1.0f;
  int input_zero_point = 0;  ///< in [-128, 127]
  /// Mean of each input channel over the calibration images (bias correction); empty: none.
  std::vector<double> channel_means;
};

/// The convolutions to run in int8, by the name of the conv's output value in the optimized
/// float graph (the graph the calibration observed).
struct Int8Plan {
  std::map<std::string, Int8Conv> convs;
  /// Subtract the expected output error of the rounded weights, mean(x) . (w_int8 - w), from
  /// each output channel's bias.
  bool bias_correction = true;
};

/// Per-output-channel symmetric int8 weights of a conv (axis 0): scale_o = max|w_o| / 127 (1 for
/// an all-zero channel), q = clamp(round_half_even(w / scale_o), -127, 127).
struct ChannelQuantized {
  Tensor q;       ///< int8, the shape of w
  Tensor scales;  ///< float32 [O]
};
ChannelQuantized quantize_per_channel(const Tensor& w);

/// Rewrites every conv of ctx.int8: x -> QuantizeLinear -> DequantizeLinear -> Conv (one pair per
/// value and scale, shared by the convs reading it), the weights as DequantizeLinear of their
/// per-channel int8 form, the bias corrected. Raises a UserError naming a planned conv that is
/// missing or whose weights are not a float constant. Runs after the last constant folding, so
/// the pairs stay in the graph.
class QuantizeGraph : public Pass {
 public:
  std::string name() const override { return "quantize_graph"; }
  bool run(Graph& g, PassContext& ctx) override;
};

}  // namespace yoloc
