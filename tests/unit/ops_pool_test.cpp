// MaxPool, AveragePool, LpPool and the global pools on small hand-computed cases.
#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;
using Ints = std::vector<int64_t>;

TEST(MaxPool, StridedWindowsWithIndices) {
  const Attrs a = attrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  auto y = run_op("MaxPool", {iota_f32({1, 1, 4, 4})}, a, 2);
  expect_values(y[0], {1, 1, 2, 2}, {5, 7, 13, 15});
  EXPECT_EQ(y[1].dtype(), DType::kInt64);
  expect_values(y[1], {1, 1, 2, 2}, {5, 7, 13, 15});
  Attrs col = a;
  col.set("storage_order", int64_t{1});
  // Column-major index of (h, w) is w * H + h.
  expect_values(run_op("MaxPool", {iota_f32({1, 1, 4, 4})}, col, 2)[1], {1, 1, 2, 2},
                {5, 13, 7, 15});
}

TEST(MaxPool, CeilModeDilationsAndPads) {
  auto x = tensor<float>({1, 1, 5}, {1, 5, 2, 4, 3});
  expect_values(
      run_op(
          "MaxPool", {x},
          attrs({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", int64_t{1}}}))[0],
      {1, 1, 3}, {5, 4, 3});
  expect_values(
      run_op("MaxPool", {x}, attrs({{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}}))[0],
      {1, 1, 3}, {2, 5, 3});
  auto neg = tensor<float>({1, 1, 2}, {-3, -4});
  expect_values(
      run_op("MaxPool", {neg}, attrs({{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}}))[0],
      {1, 1, 3}, {-3, -3, -4});
}

TEST(MaxPool, Int8AndSameUpper) {
  auto x = tensor<int8_t>({1, 1, 3}, {-100, 7, -5});
  auto y = run_op("MaxPool", {x},
                  attrs({{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}}));
  EXPECT_EQ(y[0].dtype(), DType::kInt8);
  expect_values(y[0], {1, 1, 3}, {7, 7, -5});
}

TEST(AveragePool, CountIncludePad) {
  auto x = tensor<float>({1, 1, 3}, {1, 2, 3});
  Attrs a = attrs({{"kernel_shape", Ints{3}}, {"pads", Ints{1, 1}}});
  expect_values(run_op("AveragePool", {x}, a)[0], {1, 1, 3}, {1.5, 2, 2.5});
  a.set("count_include_pad", int64_t{1});
  expect_values(run_op("AveragePool", {x}, a)[0], {1, 1, 3}, {1, 2, 5.0 / 3});
}

TEST(AveragePool, TwoDimensional) {
  expect_values(run_op("AveragePool", {iota_f32({1, 1, 4, 4})},
                       attrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}))[0],
                {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5});
}

TEST(LpPool, TwoNorm) {
  auto x = tensor<float>({1, 1, 3}, {3, -4, 12});
  expect_values(run_op("LpPool", {x}, attrs({{"kernel_shape", Ints{2}}}))[0], {1, 1, 2},
                {5, std::sqrt(160.0)});
}

TEST(GlobalPool, AverageAndMax) {
  auto x = tensor<float>({1, 2, 2, 1}, {1, 2, -3, -5});
  expect_values(run_op("GlobalAveragePool", {x})[0], {1, 2, 1, 1}, {1.5, -4});
  expect_values(run_op("GlobalMaxPool", {x})[0], {1, 2, 1, 1}, {2, -3});
}

TEST(Pool, InferenceAndErrors) {
  TensorType x(DType::kFloat32, {Dim::sym("batch"), 8, 20, 20});
  auto t = infer_op("MaxPool", {x}, {},
                    attrs({{"kernel_shape", Ints{5, 5}}, {"pads", Ints{2, 2, 2, 2}}}));
  EXPECT_EQ(t[0].str(), "float32[batch, 8, 20, 20]");
  EXPECT_THROW(run_op("MaxPool", {iota_f32({1, 1, 4, 4})}), UserError);  // no kernel_shape
  EXPECT_THROW(run_op("MaxPool", {iota_f32({1, 1, 4, 4})}, attrs({{"kernel_shape", Ints{5, 5}}})),
               UserError);
}
