// The quantized graph (quantize_graph) on the reference executor against a fake-quant conv
// computed here by plain loops, its float lowering (fake_quant_lowering) against the quantized
// graph, and the rules choosing which convs stay float.
#include <gtest/gtest.h>

#include <cmath>

#include "graph_builder.h"
#include "passes/fake_quant_lowering.h"
#include "passes/quantize_graph.h"
#include "quant/int8_rules.h"

namespace yoloc {
namespace {

using testing::conv;
using testing::count_op;
using testing::input;
using testing::node;
using testing::random_tensor;

float fake_quant(float x, float s, int zp) {
  const float q = std::clamp(std::nearbyint(x / s) + static_cast<float>(zp), -128.0f, 127.0f);
  return (q - static_cast<float>(zp)) * s;
}

/// y = conv3x3(fq(x), wq) + b' by loops: x [1, C, H, W], w [O, C, 3, 3], pads 1.
std::vector<float> expected_conv(const Tensor& x, const Tensor& w, const Tensor& b, float s,
                                 int zp, const std::vector<double>& means) {
  const int64_t C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], O = w.shape()[0];
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  std::vector<float> wq(pw, pw + w.numel());
  std::vector<double> bias(b.to_doubles());
  for (int64_t o = 0; o < O; ++o) {
    float m = 0;
    for (int64_t k = 0; k < C * 9; ++k) m = std::max(m, std::fabs(pw[o * C * 9 + k]));
    const float so = m / 127.0f;
    for (int64_t k = 0; k < C * 9; ++k) {
      const int64_t i = o * C * 9 + k;
      wq[i] = std::clamp(std::nearbyint(pw[i] / so), -127.0f, 127.0f) * so;
      if (!means.empty()) bias[o] -= (wq[i] - pw[i]) * means[k / 9];
    }
  }
  std::vector<float> y(O * H * W);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t r = 0; r < H; ++r)
      for (int64_t c = 0; c < W; ++c) {
        double acc = bias[o];
        for (int64_t ci = 0; ci < C; ++ci)
          for (int64_t dr = -1; dr <= 1; ++dr)
            for (int64_t dc = -1; dc <= 1; ++dc) {
              const int64_t rr = r + dr, cc = c + dc;
              if (rr < 0 || rr >= H || cc < 0 || cc >= W) continue;
              acc += fake_quant(px[(ci * H + rr) * W + cc], s, zp) *
                     wq[((o * C + ci) * 3 + dr + 1) * 3 + dc + 1];
            }
        y[(o * H + r) * W + c] = static_cast<float>(acc);
      }
  return y;
}

struct SmallConv {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  Value* x;
  Value* y;
  SmallConv() {
    x = input(*g, "x", {1, 2, 5, 5});
    y = conv(*g, x, 2, 3, 3, 7);
    y->name = "y";
    g->outputs.push_back(y);
  }
};

void expect_near(const std::vector<float>& want, const Tensor& got, float tol) {
  ASSERT_EQ(static_cast<int64_t>(want.size()), got.numel());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data<float>()[i], want[i], tol) << i;
}

TEST(QuantizeGraph, ConvMatchesAFakeQuantConvByLoops) {
  for (const bool correct : {false, true}) {
    SmallConv m;
    const Tensor w = m.y->producer->inputs[1]->data;
    const Tensor b = m.y->producer->inputs[2]->data;
    Int8Plan plan;
    plan.bias_correction = correct;
    const std::vector<double> means = {0.3, -0.2};
    plan.convs["y"] = {0.013f, -7, means};
    PassContext ctx;
    ctx.int8 = &plan;
    EXPECT_TRUE(QuantizeGraph().run(*m.g, ctx));
    EXPECT_EQ(count_op(*m.g, "QuantizeLinear"), 1u);
    EXPECT_EQ(count_op(*m.g, "DequantizeLinear"), 2u);  // the activation's and the weights'
    const Tensor x = random_tensor({1, 2, 5, 5}, 3, -1.5f, 2.0f);
    const auto out = run_reference(*m.g, {{"x", x}});
    expect_near(expected_conv(x, w, b, 0.013f, -7, correct ? means : std::vector<double>{}),
                out[0].tensor, 2e-5f);
  }
}

TEST(QuantizeGraph, FloatLoweringComputesWhatThePairsDo) {
  SmallConv m;
  Int8Plan plan;
  plan.convs["y"] = {0.02f, 5, {}};
  PassContext ctx;
  ctx.int8 = &plan;
  QuantizeGraph().run(*m.g, ctx);
  std::unique_ptr<Graph> lowered = m.g->clone();
  EXPECT_TRUE(FakeQuantLowering().run(*lowered, ctx));
  EXPECT_EQ(count_op(*lowered, "QuantizeLinear"), 0u);
  EXPECT_EQ(count_op(*lowered, "DequantizeLinear"), 0u);
  EXPECT_EQ(count_op(*lowered, "Round"), 1u);
  // Values far outside the range clip to -128 and 127.
  const Tensor x = random_tensor({1, 2, 5, 5}, 11, -4.0f, 4.0f);
  const auto a = run_reference(*m.g, {{"x", x}});
  const auto b = run_reference(*lowered, {{"x", x}});
  for (int64_t i = 0; i < a[0].tensor.numel(); ++i)
    EXPECT_EQ(a[0].tensor.data<float>()[i], b[0].tensor.data<float>()[i]) << i;
}

TEST(QuantizeGraph, APlannedConvTheGraphLacksIsAUserError) {
  SmallConv m;
  Int8Plan plan;
  plan.convs["not_there"] = {0.02f, 0, {}};
  PassContext ctx;
  ctx.int8 = &plan;
  EXPECT_THROW(QuantizeGraph().run(*m.g, ctx), UserError);
}

TEST(QuantizeGraph, PerChannelWeightsByHand) {
  const Tensor w = Tensor::from_vector<float>({2, 3}, {1.27f, -0.5f, 0.01f, 0, 0, 0});
  const ChannelQuantized q = quantize_per_channel(w);
  EXPECT_FLOAT_EQ(q.scales.data<float>()[0], 0.01f);
  EXPECT_FLOAT_EQ(q.scales.data<float>()[1], 1.0f);  // an all-zero channel
  EXPECT_EQ(q.q.data<int8_t>()[0], 127);
  EXPECT_EQ(q.q.data<int8_t>()[1], -50);
  EXPECT_EQ(q.q.data<int8_t>()[2], 1);
}

TEST(Int8Rules, StemAndHeadOutputStayFloat) {
  Graph g;
  Value* x = input(g, "images", {1, 3, 8, 8});
  Value* a = conv(g, x, 3, 4, 3, 1);
  Value* b = conv(g, a, 4, 4, 3, 2);
  Value* c = conv(g, b, 4, 2, 1, 3);
  g.outputs.push_back(c);
  auto choices = quant::choose_int8_convs(g, {});
  ASSERT_EQ(choices.size(), 3u);
  EXPECT_NE(choices[0].float_reason.find("stem"), std::string::npos);
  EXPECT_EQ(choices[1].float_reason, "");
  EXPECT_EQ(choices[1].input, a->name);
  EXPECT_NE(choices[2].float_reason.find("head"), std::string::npos);
  choices = quant::choose_int8_convs(g, {"*" + b->name.substr(1) + "*"});
  EXPECT_EQ(choices[1].float_reason, "--int8-skip");
}

TEST(Int8Rules, DepthwiseConvStaysFloat) {
  // stem -> depthwise 3x3 (group 4 of one channel) -> dense 1x1 -> grouped 3x3 (group 2 of two
  // channels) -> head conv: only the depthwise conv is kept in float among the middle ones.
  Graph g;
  Value* x = input(g, "images", {1, 3, 8, 8});
  Value* a = conv(g, x, 3, 4, 3, 1);
  Value* dw = node(g, "Conv",
                   {a, g.add_constant("w", random_tensor({4, 1, 3, 3}, 5)),
                    g.add_constant("b", random_tensor({4}, 6))},
                   testing::conv_attrs(3, 1, 4));
  Value* pw = conv(g, dw, 4, 4, 1, 7);
  Value* grouped = node(g, "Conv",
                        {pw, g.add_constant("w", random_tensor({4, 2, 3, 3}, 8)),
                         g.add_constant("b", random_tensor({4}, 9))},
                        testing::conv_attrs(3, 1, 2));
  Value* out = conv(g, grouped, 4, 2, 1, 10);
  g.outputs.push_back(out);
  const auto choices = quant::choose_int8_convs(g, {});
  ASSERT_EQ(choices.size(), 5u);
  EXPECT_EQ(choices[1].conv, dw->name);
  EXPECT_NE(choices[1].float_reason.find("depthwise"), std::string::npos);
  EXPECT_EQ(choices[2].float_reason, "");
  EXPECT_EQ(choices[3].float_reason, "");  // grouped, not depthwise: int8
}

}  // namespace
}  // namespace yoloc
