// Softmax, LogSoftmax, Hardmax: per-axis (opset 13) and flattened (coerce_2d, opsets < 13).
#include <cmath>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

Attrs axis_attrs(int64_t axis, int64_t coerce = 0) {
  Attrs a;
  a.set("axis", axis);
  if (coerce) a.set("coerce_2d", coerce);
  return a;
}

// softmax([0, 1, 2]) from numpy: np.exp(v) / np.exp(v).sum()
const double kS0 = 0.09003057317038046, kS1 = 0.24472847105479764, kS2 = 0.6652409557748219;

}  // namespace

TEST(SoftmaxOp, LastAxisByDefault) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 1000, 1001, 1002});
  expect_near(run_op_exact("Softmax", {x})[0], {kS0, kS1, kS2, kS0, kS1, kS2});
  expect_near(
      run_op_exact("LogSoftmax", {x})[0],
      {std::log(kS0), std::log(kS1), std::log(kS2), std::log(kS0), std::log(kS1), std::log(kS2)},
      1e-5);
}

TEST(SoftmaxOp, InnerAxis) {
  // [3, 2]: softmax over axis 0 = each column.
  Tensor x = Tensor::from_vector<double>({3, 2}, {0, 5, 1, 5, 2, 5});
  expect_near(run_op_exact("Softmax", {x}, axis_attrs(0))[0],
              {kS0, 1.0 / 3, kS1, 1.0 / 3, kS2, 1.0 / 3}, 1e-12);
  expect_near(run_op_exact("Hardmax", {x}, axis_attrs(-2))[0], {0, 1, 0, 0, 1, 0});
}

TEST(SoftmaxOp, Coerce2dFlattensFromAxis) {
  // Shape [1, 2, 2], axis 1: the flattened and the per-axis definitions differ.
  Tensor x = Tensor::from_vector<float>({1, 2, 2}, {0, 1, 2, 0});
  // Flattened: one row of 4 values [0, 1, 2, 0].
  const double z = 1 + std::exp(1.0) + std::exp(2.0) + 1;
  expect_near(run_op_exact("Softmax", {x}, axis_attrs(1, 1))[0],
              {1 / z, std::exp(1.0) / z, std::exp(2.0) / z, 1 / z});
  // Per-axis (axis 1): columns [0, 2] and [1, 0].
  const double a = 1 / (1 + std::exp(2.0)), b = 1 / (1 + std::exp(-1.0));
  expect_near(run_op_exact("Softmax", {x}, axis_attrs(1))[0], {a, b, 1 - a, 1 - b});
  // Hardmax flattened: one 1 at the global maximum of the row.
  expect_near(run_op_exact("Hardmax", {x}, axis_attrs(1, 1))[0], {0, 0, 1, 0});
}

TEST(SoftmaxOp, HardmaxTiesPickFirst) {
  Tensor x = Tensor::from_vector<Half>({4}, {Half(1.0f), Half(3.0f), Half(3.0f), Half(0.0f)});
  expect_near(run_op_exact("Hardmax", {x})[0], {0, 1, 0, 0});
}

TEST(SoftmaxOp, Errors) {
  EXPECT_THROW(run_op_exact("Softmax", {Tensor::scalar<float>(1)}), UserError);
  EXPECT_THROW(run_op_exact("Softmax", {Tensor::from_vector<float>({2}, {1, 2})}, axis_attrs(1)),
               UserError);
  EXPECT_THROW(run_op_exact("Softmax", {Tensor::from_vector<int32_t>({2}, {1, 2})}), UserError);
  EXPECT_THROW(run_op_exact("Softmax", {Tensor::from_vector<float>({2}, {1, 2})}, axis_attrs(0, 2)),
               UserError);
}

TEST(SoftmaxOp, InferenceKeepsSymbols) {
  TensorType t(DType::kFloat32, {Dim::sym("batch"), Dim(80), Dim()});
  EXPECT_EQ(infer_op("Softmax", {t}, {}, axis_attrs(1))[0], t);
}

TEST(SoftmaxConverters, OldOpsetsFlattenUnlessLastAxis) {
  auto m = one_node_model("Softmax", 11, {{"x", onnx::TensorProto::FLOAT, {-1, 4, 5}}}, {"x"});
  auto g = import_model(m);  // default axis 1 of rank 3: flattened
  EXPECT_EQ(g->nodes()[0]->attrs.get_int("axis"), 1);
  EXPECT_EQ(g->nodes()[0]->attrs.get_int("coerce_2d", 0), 1);

  auto last = one_node_model("LogSoftmax", 12, {{"x", onnx::TensorProto::FLOAT, {2, 5}}}, {"x"});
  auto g2 = import_model(last);  // default axis 1 of rank 2 is the last axis
  EXPECT_EQ(g2->nodes()[0]->attrs.get_int("axis"), -1);
  EXPECT_FALSE(g2->nodes()[0]->attrs.has("coerce_2d"));

  auto v13 = one_node_model("Softmax", 13, {{"x", onnx::TensorProto::FLOAT, {2, 5, 3}}}, {"x"});
  add_attr(v13, "axis", int64_t{1});
  auto g3 = import_model(v13);
  EXPECT_EQ(g3->nodes()[0]->attrs.get_int("axis"), 1);
  EXPECT_FALSE(g3->nodes()[0]->attrs.has("coerce_2d"));
}
