#pragma once
// What the box-pair tests (CudaConvTask::boxes) share, emulated and on a GPU: a YOLOv8 detect
// tail as yolov8n's, the box pair of a level, and the check of the detector output against the
// pair's logits through a float64 DFL and the tail's decode statements.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "codegen/cuda/detect_tail_template.h"
#include "codegen/cuda/tasks.h"
#include "conv_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace boxes {

// A YOLOv8 detect tail of n images of 640 x 640 built by hand, as the importer reads yolov8n's
// (CudaBoxesRules.HandBuiltTailIsYolov8ns checks that): levels 80, 40, 20 (strides 8, 16, 32) of
// NCHW fp16 head outputs (64 box logits, 80 classes), DFL weights 0..15, the anchor points
// (x + 0.5, y + 0.5) and strides as table rows, the xywh decode, a float32 [n, 84, 8400] output.
inline std::shared_ptr<const DetectTailTask> yolov8_tail(int64_t n) {
  using Kind = DetectTailOperand::Kind;
  auto t = std::make_shared<DetectTailTask>();
  t->n = n;
  t->classes = 80;
  int64_t first = 0;
  std::vector<std::vector<float>> rows(3);
  for (const int64_t stride : {8, 16, 32}) {
    const int64_t hw = 640 / stride;
    DetectTailLevel l;
    l.h = l.w = hw;
    l.first = first;
    l.box_input = static_cast<int>(t->inputs.size());
    l.cls_input = l.box_input + 1;
    for (const int64_t ch : {int64_t{64}, int64_t{80}}) {
      CudaOperand o;
      o.dtype = DType::kFloat16;
      o.strides = {ch * hw * hw, hw * hw, hw, 1};
      t->inputs.push_back(o);
    }
    t->levels.push_back(l);
    for (int64_t y = 0; y < hw; ++y)
      for (int64_t x = 0; x < hw; ++x) {
        rows[0].push_back(static_cast<float>(x) + 0.5f);
        rows[1].push_back(static_cast<float>(y) + 0.5f);
        rows[2].push_back(static_cast<float>(stride));
      }
    first += hw * hw;
  }
  t->anchors = first;
  for (const auto& r : rows) t->table.insert(t->table.end(), r.begin(), r.end());
  for (int r = 0; r < 16; ++r) t->dfl_weights.push_back(static_cast<float>(r));
  const auto d = [](int64_t i) { return DetectTailOperand{Kind::kDistance, i, 0}; };
  const auto tmp = [](int64_t i) { return DetectTailOperand{Kind::kTemp, i, 0}; };
  const auto row = [](int64_t i) { return DetectTailOperand{Kind::kTable, i, 0}; };
  const DetectTailOperand half{Kind::kLiteral, 0, 0.5f};
  t->decode = {{'-', row(0), d(0)},   {'-', row(1), d(1)},   {'+', row(0), d(2)},
               {'+', row(1), d(3)},   {'+', tmp(0), tmp(2)}, {'+', tmp(1), tmp(3)},
               {'-', tmp(2), tmp(0)}, {'-', tmp(3), tmp(1)}, {'*', tmp(4), half},
               {'*', tmp(5), half},   {'*', tmp(8), row(2)}, {'*', tmp(9), row(2)},
               {'*', tmp(6), row(2)}, {'*', tmp(7), row(2)}};
  t->box_out = {tmp(10), tmp(11), tmp(12), tmp(13)};
  t->class_offset = 4;
  t->output.dtype = DType::kFloat32;
  t->output.strides = {84 * first, first, 1};
  return t;
}

// The tail with its output stored as `out`.
inline std::shared_ptr<const DetectTailTask> with_output(std::shared_ptr<const DetectTailTask> t,
                                                         DType out) {
  auto copy = std::make_shared<DetectTailTask>(*t);
  copy->output.dtype = out;
  return copy;
}

// The box pair of a level of h x w pixels (64 -> 64 3x3, then the 1x1 to the S x R logits,
// NCHW or NHWC), decoding into `tail`'s output from anchor `base`.
inline CudaConvTask box_pair(const std::shared_ptr<const DetectTailTask>& tail, int64_t h,
                             int64_t w, int64_t base, bool nchw) {
  const int64_t logits = tail->sides * tail->bins;
  CudaConvTask t = with_b2b(
      CudaConvTask::dense(ConvTask::make(tail->n, 64, h, w, 64, 3, 1, 1, Activation::kSilu),
                          DType::kFloat16, DType::kFloat16),
      logits, Activation::kNone, {logits, 0}, nchw, DType::kFloat16, 9);
  t.sm = 90;
  t.boxes = CudaBoxesOut{tail, base};
  return t;
}

inline double operand(const DetectTailOperand& o, const std::vector<double>& d,
                      const std::vector<double>& temps, const DetectTailTask& t, int64_t a) {
  switch (o.kind) {
    case DetectTailOperand::Kind::kDistance: return d[static_cast<size_t>(o.index)];
    case DetectTailOperand::Kind::kTemp: return temps[static_cast<size_t>(o.index)];
    case DetectTailOperand::Kind::kTable:
      return t.table[static_cast<size_t>(o.index * t.anchors + a)];
    case DetectTailOperand::Kind::kLiteral: return o.literal;
  }
  return 0;
}

// The box channels of anchor a (output channel, value) from its S x R logits, in float64.
inline std::vector<std::pair<int64_t, double>> decode(const DetectTailTask& t,
                                                      const std::vector<double>& logits,
                                                      int64_t a) {
  std::vector<double> d(static_cast<size_t>(t.sides));
  for (int64_t s = 0; s < t.sides; ++s) {
    double m = -INFINITY, sum = 0, acc = 0;
    for (int64_t r = 0; r < t.bins; ++r)
      m = std::max(m, logits[static_cast<size_t>(s * t.bins + r)]);
    for (int64_t r = 0; r < t.bins; ++r) {
      const double e = std::exp(logits[static_cast<size_t>(s * t.bins + r)] - m);
      sum += e;
      acc += e * t.dfl_weights[static_cast<size_t>(r)];
    }
    d[static_cast<size_t>(s)] = acc / sum + t.dfl_bias;
  }
  std::vector<double> temps;
  for (const DetectTailStatement& s : t.decode) {
    const double x = operand(s.a, d, temps, t, a), y = operand(s.b, d, temps, t, a);
    temps.push_back(s.op == '+' ? x + y : s.op == '-' ? x - y : s.op == '*' ? x * y : x / y);
  }
  std::vector<std::pair<int64_t, double>> out;
  for (size_t k = 0; k < t.box_out.size(); ++k) {
    const int64_t ch =
        t.class_offset == 0 ? t.classes + static_cast<int64_t>(k) : static_cast<int64_t>(k);
    out.emplace_back(ch, operand(t.box_out[k], d, temps, t, a));
  }
  return out;
}

// A pair's inputs: its operands (seed), packed weights, input buffer, the reference logits
// (NCHW float32, rounded to their stored type) and the tail's table.
struct BoxInputs {
  ConvOperands o;
  Tensor want, packed, packed2;
  std::vector<uint8_t> x;
  std::vector<float> table;
};

inline BoxInputs box_inputs(const CudaConvTask& t, uint32_t seed) {
  BoxInputs in;
  in.o = make_operands(first_stage(t), seed);
  in.want = rounded_to(reference_b2b(t, in.o), t.b2b->out_dtype);
  in.packed = TensorCoreConvTemplate::pack_weights(t, in.o.w.data<float>());
  in.packed2 = TensorCoreConvTemplate::pack_b2b_weights(t);
  in.x = input_buffer(t, in.o.x, 0x7f);
  in.table.assign(t.boxes->tail->table.begin(), t.boxes->tail->table.end());
  return in;
}

// The detector output a pair writes into, every byte `fill` before.
inline std::vector<uint8_t> box_output(const CudaConvTask& t, uint8_t fill) {
  const DetectTailTask& tail = *t.boxes->tail;
  return std::vector<uint8_t>(
      static_cast<size_t>(tail.n * tail.output.strides[0]) * dtype_size(tail.output.dtype), fill);
}

// The detector output y against the reference decode of the logits `want`, and every other
// byte still `fill`.
inline ::testing::AssertionResult check_boxes(const CudaConvTask& t, const std::vector<uint8_t>& y,
                                              const Tensor& want, uint8_t fill) {
  const DetectTailTask& tail = *t.boxes->tail;
  const DType od = tail.output.dtype;
  const std::vector<int64_t>& os = tail.output.strides;
  const ConvTask& c = t.conv;
  const int64_t hw = c.oh * c.ow, logits = t.b2b->k;
  const size_t es = dtype_size(od);
  std::vector<bool> mine(y.size() / es, false);
  int bad = 0;
  std::string first;
  for (int64_t i = 0; i < c.n; ++i)
    for (int64_t p = 0; p < hw; ++p) {
      std::vector<double> v(static_cast<size_t>(logits));
      for (int64_t ch = 0; ch < logits; ++ch)
        v[static_cast<size_t>(ch)] = want.data<float>()[(i * logits + ch) * hw + p];
      const int64_t a = t.boxes->base + p;
      for (const auto& [ch, value] : decode(tail, v, a)) {
        const auto at = static_cast<size_t>(i * os[0] + ch * os[1] + a * os[2]);
        mine[at] = true;
        const double got = stored_element(y, at, od);
        // The logits' rounding may differ from the reference's by an ulp (another summation
        // order): about 1e-3 of a box coordinate of the 20x20 level (stride 32).
        const double tol = (od == DType::kFloat32 ? 2e-3 : 4e-3) * std::fabs(value) + 1e-2;
        if (!(std::fabs(got - value) <= tol) && bad++ == 0)
          first =
              fmt::format("image {} anchor {} channel {}: got {}, want {}", i, a, ch, got, value);
      }
    }
  count_written_outside(y, mine, es, fill, bad, first);
  if (bad) return ::testing::AssertionFailure() << bad << " bad; first: " << first;
  return ::testing::AssertionSuccess();
}

}  // namespace boxes
}  // namespace yoloc::codegen::cuda::testing
