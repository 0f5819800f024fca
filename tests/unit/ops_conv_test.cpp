// Conv, ConvInteger and ConvTranspose on small hand-computed cases.
#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;
using Ints = std::vector<int64_t>;

namespace {

Tensor iota_image(int64_t h, int64_t w) {  // 1, 2, 3, ... in a 1x1xhxw image
  std::vector<float> v(static_cast<size_t>(h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return tensor<float>({1, 1, h, w}, v);
}

Tensor ones(const Shape& s) { return tensor<float>(s, std::vector<float>(shape_numel(s), 1.0f)); }

}  // namespace

TEST(Conv, PlainWithBias) {
  auto y = run_op("Conv", {iota_image(3, 3), ones({1, 1, 2, 2}), tensor<float>({1}, {1})});
  expect_values(y[0], {1, 1, 2, 2}, {13, 17, 25, 29});
}

TEST(Conv, PadsAndStrides) {
  auto y = run_op("Conv", {iota_image(3, 3), ones({1, 1, 3, 3})},
                  attrs({{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}));
  expect_values(y[0], {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(Conv, Dilations) {
  auto y =
      run_op("Conv", {iota_image(3, 3), ones({1, 1, 2, 2})}, attrs({{"dilations", Ints{2, 2}}}));
  expect_values(y[0], {1, 1, 1, 1}, {1 + 3 + 7 + 9});
}

TEST(Conv, AsymmetricPadsAndStride3) {
  // 1x5 row, kernel 1x2 ones, pads left 2 right 0, stride 3: windows start at -2, 1.
  auto y = run_op("Conv", {iota_image(1, 5), ones({1, 1, 1, 2})},
                  attrs({{"pads", Ints{0, 2, 0, 0}}, {"strides", Ints{1, 3}}}));
  expect_values(y[0], {1, 1, 1, 2}, {0, 2 + 3});
}

TEST(Conv, AutoPadSameUpperAndLower) {
  auto x = iota_image(1, 4);
  auto up =
      run_op("Conv", {x, ones({1, 1, 1, 2})}, attrs({{"auto_pad", std::string("SAME_UPPER")}}));
  expect_values(up[0], {1, 1, 1, 4}, {3, 5, 7, 4});
  auto lo =
      run_op("Conv", {x, ones({1, 1, 1, 2})}, attrs({{"auto_pad", std::string("SAME_LOWER")}}));
  expect_values(lo[0], {1, 1, 1, 4}, {1, 3, 5, 7});
}

TEST(Conv, DepthwiseGroups) {
  auto x = tensor<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  auto w = tensor<float>({2, 1, 1, 1}, {10, -1});
  auto y = run_op("Conv", {x, w}, attrs({{"group", int64_t{2}}}));
  expect_values(y[0], {1, 2, 1, 2}, {10, 20, -3, -4});
}

TEST(Conv, GroupsMixChannelsOnlyWithinAGroup) {
  // 4 input channels, 2 groups, 1x1 kernels summing the two channels of each group.
  auto x = tensor<float>({1, 4, 1, 1}, {1, 2, 3, 4});
  auto y = run_op("Conv", {x, ones({2, 2, 1, 1})}, attrs({{"group", int64_t{2}}}));
  expect_values(y[0], {1, 2, 1, 1}, {3, 7});
}

TEST(Conv, OneAndThreeDimensional) {
  auto y1 = run_op(
      "Conv", {tensor<float>({1, 1, 5}, {1, 2, 3, 4, 5}), tensor<float>({1, 1, 3}, {1, 0, -1})});
  expect_values(y1[0], {1, 1, 3}, {-2, -2, -2});
  auto x3 = tensor<float>({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto y3 = run_op("Conv", {x3, ones({1, 1, 2, 2, 2})}, attrs({{"pads", Ints{0, 0, 1, 0, 0, 0}}}));
  expect_values(y3[0], {1, 1, 1, 1, 2}, {1 + 3 + 5 + 7, 36});
}

TEST(Conv, Float16RoundsOutputOnce) {
  Tensor x = iota_image(3, 3).cast(DType::kFloat16);
  auto y = run_op("Conv", {x, ones({1, 1, 2, 2}).cast(DType::kFloat16)});
  EXPECT_EQ(y[0].dtype(), DType::kFloat16);
  expect_values(y[0], {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(Conv, InferenceKeepsSymbolicBatch) {
  TensorType x(DType::kFloat32, {Dim::sym("batch"), 3, 640, 640});
  Tensor w = ones({16, 3, 3, 3});
  auto t = infer_op("Conv", {x, TensorType::of(w)}, {Tensor(), w},
                    attrs({{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}));
  EXPECT_EQ(t[0].str(), "float32[batch, 16, 320, 320]");
  TensorType xu(DType::kFloat32, {1, 3, Dim(), 64});
  auto u = infer_op("Conv", {xu, TensorType::of(w)}, {Tensor(), w}, {});
  EXPECT_FALSE(u[0].dims[2].known());
  EXPECT_EQ(u[0].dims[3].value, 62);
}

TEST(Conv, FlopsCountTwoPerMac) {
  Graph g;
  Value* x = g.add_value("x", TensorType(DType::kFloat32, {1, 3, 8, 8}));
  Value* w = g.add_constant("w", ones({4, 3, 3, 3}));
  Node* n = g.add_node("Conv", {x, w}, 1, attrs({{"pads", Ints{1, 1, 1, 1}}}));
  infer_shapes(g);
  EXPECT_EQ(n->def->flops(*n), 2 * (4 * 8 * 8) * 27);
}

TEST(Conv, BadInputsAreUserErrors) {
  EXPECT_THROW(run_op("Conv", {iota_image(3, 3), ones({1, 2, 2, 2})}), UserError);
  EXPECT_THROW(run_op("Conv", {iota_image(2, 2), ones({1, 1, 3, 3})}), UserError);
  EXPECT_THROW(
      run_op("Conv", {iota_image(3, 3), ones({1, 1, 2, 2})}, attrs({{"strides", Ints{1}}})),
      UserError);
}

TEST(ConvInteger, ZeroPointsAndPadding) {
  auto x = tensor<uint8_t>({1, 1, 2, 2}, {10, 11, 12, 13});
  auto w = tensor<uint8_t>({1, 1, 2, 2}, {5, 6, 7, 8});
  auto y = run_op("ConvInteger", {x, w, Tensor::scalar<uint8_t>(10), Tensor::scalar<uint8_t>(5)});
  EXPECT_EQ(y[0].dtype(), DType::kInt32);
  expect_values(y[0], {1, 1, 1, 1}, {0 * 0 + 1 * 1 + 2 * 2 + 3 * 3});
  // Padding contributes zero after the zero point is subtracted.
  auto p =
      run_op("ConvInteger", {x, tensor<uint8_t>({1, 1, 1, 1}, {2}), Tensor::scalar<uint8_t>(10)},
             attrs({{"pads", Ints{1, 0, 0, 0}}}));
  expect_values(p[0], {1, 1, 3, 2}, {0, 0, 0, 2, 4, 6});
}

TEST(ConvInteger, PerChannelWeightZeroPointAndInt8) {
  auto x = tensor<uint8_t>({1, 1, 2, 2}, {10, 11, 12, 13});
  auto w = tensor<int8_t>({2, 1, 2, 2}, {5, 6, 7, 8, -1, -1, -1, -1});
  auto y = run_op("ConvInteger", {x, w, Tensor::scalar<uint8_t>(10), tensor<int8_t>({2}, {5, -2})});
  expect_values(y[0], {1, 2, 1, 1}, {14, 6});
}

TEST(ConvTranspose, StridesScatterEachInput) {
  auto x = tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto y = run_op("ConvTranspose", {x, ones({1, 1, 2, 2})}, attrs({{"strides", Ints{2, 2}}}));
  expect_values(y[0], {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST(ConvTranspose, OverlapsAddAndBias) {
  auto x = tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto y = run_op("ConvTranspose", {x, ones({1, 2, 2, 2}), tensor<float>({2}, {0, 100})});
  expect_values(y[0], {1, 2, 3, 3},
                {1, 3, 2, 4, 10, 6, 3, 7, 4, 101, 103, 102, 104, 110, 106, 103, 107, 104});
}

TEST(ConvTranspose, PadsOutputPaddingAndOutputShape) {
  auto x = tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  // Full result is 3x3 ([[1,3,2],[4,10,6],[3,7,4]]); pads crop it, output_shape extends it.
  auto p = run_op("ConvTranspose", {x, ones({1, 1, 2, 2})}, attrs({{"pads", Ints{1, 1, 0, 0}}}));
  expect_values(p[0], {1, 1, 2, 2}, {10, 6, 7, 4});
  auto s = run_op("ConvTranspose", {x, ones({1, 1, 2, 2})}, attrs({{"output_shape", Ints{4, 3}}}));
  expect_values(s[0], {1, 1, 4, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4, 0, 0, 0});
  auto o = run_op("ConvTranspose", {tensor<float>({1, 1, 1, 1}, {5}), ones({1, 1, 1, 1})},
                  attrs({{"strides", Ints{2, 2}}, {"output_padding", Ints{1, 0}}}));
  expect_values(o[0], {1, 1, 2, 1}, {5, 0});
}
