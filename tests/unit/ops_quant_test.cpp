// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: rounding, saturation, per-axis.
#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  auto x = tensor<float>({6}, {0, 1.5f, 2.5f, -1, 300, 0.49f});
  auto y = run_op("QuantizeLinear", {x, Tensor::scalar<float>(1)});
  EXPECT_EQ(y[0].dtype(), DType::kUInt8);
  expect_values(y[0], {6}, {0, 2, 2, 0, 255, 0});
  auto s = run_op("QuantizeLinear", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<int8_t>(-10)});
  EXPECT_EQ(s[0].dtype(), DType::kInt8);
  expect_values(s[0], {6}, {-10, -7, -5, -12, 127, -9});
}

TEST(QuantizeLinear, PerAxis) {
  auto x = tensor<float>({2, 2}, {1, 2, 3, 4});
  Attrs a;
  a.set("axis", int64_t{0});
  auto y = run_op("QuantizeLinear",
                  {x, tensor<float>({2}, {1, 0.5f}), tensor<uint8_t>({2}, {10, 20})}, a);
  expect_values(y[0], {2, 2}, {11, 12, 26, 28});
  a.set("axis", int64_t{1});
  auto z = run_op("QuantizeLinear",
                  {x, tensor<float>({2}, {1, 0.5f}), tensor<uint8_t>({2}, {10, 20})}, a);
  expect_values(z[0], {2, 2}, {11, 24, 13, 28});
  EXPECT_THROW(run_op("QuantizeLinear", {x, tensor<float>({3}, {1, 1, 1})}), UserError);
}

TEST(DequantizeLinear, PerTensorPerAxisAndInt32) {
  auto x = tensor<int8_t>({2, 2}, {-128, 0, 10, 127});
  expect_values(
      run_op("DequantizeLinear", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<int8_t>(-2)})[0],
      {2, 2}, {-63, 1, 6, 64.5});
  Attrs a;
  a.set("axis", int64_t{0});
  expect_values(run_op("DequantizeLinear",
                       {x, tensor<float>({2}, {1, 2}), tensor<int8_t>({2}, {0, 10})}, a)[0],
                {2, 2}, {-128, 0, 0, 234});
  auto i = tensor<int32_t>({2}, {-100000, 7});
  expect_values(run_op("DequantizeLinear", {i, Tensor::scalar<float>(2)})[0], {2}, {-200000, 14});
}

TEST(DynamicQuantizeLinear, MatchesOnnxRuntime) {
  // Expected values from ONNX Runtime 1.32.
  auto y = run_op("DynamicQuantizeLinear", {tensor<float>({4}, {-0.5f, 0.2f, 1.3f, 2.55f})}, {}, 3);
  expect_values(y[0], {4}, {0, 59, 151, 255});
  expect_values(y[1], {}, {3.05 / 255}, 1e-8);
  expect_values(y[2], {}, {42});
  auto pos = run_op("DynamicQuantizeLinear", {tensor<float>({4}, {1, 2, 3, 4})}, {}, 3);
  expect_values(pos[0], {4}, {64, 127, 191, 255});
  expect_values(pos[2], {}, {0});
  auto neg = run_op("DynamicQuantizeLinear", {tensor<float>({2}, {-1, -4})}, {}, 3);
  expect_values(neg[0], {2}, {191, 0});
  expect_values(neg[2], {}, {255});
  auto zero = run_op("DynamicQuantizeLinear", {tensor<float>({2}, {0, 0})}, {}, 3);
  expect_values(zero[1], {}, {1});
  expect_values(zero[2], {}, {0});
}
