// Pad: every mode, negative pads and axes.
#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

Attrs mode(const char* m) {
  Attrs a;
  a.set("mode", std::string(m));
  return a;
}
const Tensor kRow = tensor<float>({3}, {1, 2, 3});

}  // namespace

TEST(Pad, Constant) {
  expect_values(
      run_op("Pad", {tensor<float>({2}, {1, 2}), i64({1, 2}), Tensor::scalar<float>(9)})[0], {5},
      {9, 1, 2, 9, 9});
  expect_values(run_op("Pad", {tensor<int32_t>({1}, {5}), i64({1, 0})})[0], {2}, {0, 5});
}

TEST(Pad, ReflectEdgeWrap) {
  expect_values(run_op("Pad", {kRow, i64({2, 2})}, mode("reflect"))[0], {7}, {3, 2, 1, 2, 3, 2, 1});
  expect_values(run_op("Pad", {kRow, i64({1, 2})}, mode("edge"))[0], {6}, {1, 1, 2, 3, 3, 3});
  expect_values(run_op("Pad", {kRow, i64({2, 1})}, mode("wrap"))[0], {6}, {2, 3, 1, 2, 3, 1});
}

TEST(Pad, NegativePadsCropAndAxes) {
  expect_values(run_op("Pad", {tensor<float>({4}, {1, 2, 3, 4}), i64({-1, 1})})[0], {4},
                {2, 3, 4, 0});
  auto m = tensor<float>({2, 2}, {1, 2, 3, 4});
  expect_values(run_op("Pad", {m, i64({1, 0}), Tensor(), tensor<int64_t>({1}, {-1})})[0], {2, 3},
                {0, 1, 2, 0, 3, 4});
}

TEST(Pad, InferenceAndErrors) {
  TensorType x(DType::kFloat32, {Dim::sym("batch"), 3, 4});
  auto t = infer_op("Pad", {x, TensorType::of(i64({0, 1, 1, 0, 1, 2}))},
                    {Tensor(), i64({0, 1, 1, 0, 1, 2})}, {});
  EXPECT_EQ(t[0].str(), "float32[batch, 5, 7]");
  EXPECT_THROW(run_op("Pad", {kRow, i64({1})}), UserError);
  EXPECT_THROW(run_op("Pad", {kRow, i64({-2, -2})}), UserError);
  EXPECT_THROW(run_op("Pad", {kRow, i64({1, 1})}, mode("mirror")), UserError);
}
