// MatMul, MatMulInteger and Gemm on small hand-computed cases.
#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

const Tensor kA = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
const Tensor kB = tensor<float>({3, 2}, {7, 8, 9, 10, 11, 12});

}  // namespace

TEST(MatMul, Matrices) { expect_values(run_op("MatMul", {kA, kB})[0], {2, 2}, {58, 64, 139, 154}); }

TEST(MatMul, OneDimensionalOperands) {
  auto v = tensor<float>({3}, {1, 2, 3});
  expect_values(run_op("MatMul", {v, kB})[0], {2}, {58, 64});
  expect_values(run_op("MatMul", {kA, v})[0], {2}, {14, 32});
  expect_values(run_op("MatMul", {v, v})[0], {}, {14});
}

TEST(MatMul, BatchBroadcast) {
  // A: 2 batches of 1x2; B: 3 batches of 2x1 -> 2x3 results of 1x1: a_i . b_j.
  auto a = tensor<float>({2, 1, 1, 2}, {1, 0, 0, 1});
  auto b = tensor<float>({3, 2, 1}, {1, 2, 3, 4, 5, 6});
  expect_values(run_op("MatMul", {a, b})[0], {2, 3, 1, 1}, {1, 3, 5, 2, 4, 6});
}

TEST(MatMul, IntegersAndErrors) {
  auto a = tensor<int32_t>({1, 2}, {-3, 4});
  auto b = tensor<int32_t>({2, 1}, {5, 6});
  auto y = run_op("MatMul", {a, b});
  EXPECT_EQ(y[0].dtype(), DType::kInt32);
  expect_values(y[0], {1, 1}, {9});
  EXPECT_THROW(run_op("MatMul", {kA, kA}), UserError);
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  auto a = tensor<uint8_t>({2, 2}, {3, 4, 5, 6});
  auto b = tensor<uint8_t>({2, 2}, {1, 2, 3, 4});
  auto y =
      run_op("MatMulInteger", {a, b, tensor<uint8_t>({2}, {3, 5}), tensor<uint8_t>({2}, {1, 2})});
  EXPECT_EQ(y[0].dtype(), DType::kInt32);
  // (A - az) = [[0,1],[0,1]], (B - bz) = [[0,0],[2,2]].
  expect_values(y[0], {2, 2}, {2, 2, 2, 2});
  auto s = run_op("MatMulInteger",
                  {tensor<int8_t>({1, 2}, {-128, 127}), tensor<int8_t>({2, 1}, {-128, -128})});
  expect_values(s[0], {1, 1}, {128 * 128 - 127 * 128});
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastC) {
  auto a = tensor<float>({2, 2}, {1, 2, 3, 4});
  auto eye = tensor<float>({2, 2}, {1, 0, 0, 1});
  auto c = tensor<float>({2}, {1, 2});
  Attrs at;
  at.set("transA", int64_t{1});
  at.set("alpha", 2.0f);
  at.set("beta", 10.0f);
  expect_values(run_op("Gemm", {a, eye, c}, at)[0], {2, 2}, {12, 26, 14, 28});
  Attrs tb;
  tb.set("transB", int64_t{1});
  expect_values(run_op("Gemm", {kA, tensor<float>({1, 3}, {1, 1, 1})}, tb)[0], {2, 1}, {6, 15});
}

TEST(Gemm, Flops) {
  Graph g;
  Value* a = g.add_value("a", TensorType(DType::kFloat32, {4, 3}));
  Value* b = g.add_value("b", TensorType(DType::kFloat32, {3, 5}));
  Node* n = g.add_node("Gemm", {a, b}, 1);
  infer_shapes(g);
  EXPECT_EQ(n->def->flops(*n), 2 * 4 * 5 * 3);
}
