// Gather, GatherElements, GatherND, ScatterND, ScatterElements, TopK, NonZero, Trilu.
// Expected values are hand-computed (numpy / ONNX Runtime semantics).
#include <gtest/gtest.h>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

TEST(GatherOp, NegativeIndicesAndAxis) {
  const Tensor x = iota_f32({3, 2});
  EXPECT_EQ(values(run_op("Gather", {x, i64({-1, 0})})[0]), (std::vector<double>{4, 5, 0, 1}));
  Attrs a;
  a.set("axis", int64_t{1});
  const Tensor g = run_op("Gather", {x, Tensor::scalar<int64_t>(1)}, a)[0];
  EXPECT_EQ(g.shape(), (Shape{3}));
  EXPECT_EQ(values(g), (std::vector<double>{1, 3, 5}));
  EXPECT_THROW(run_op("Gather", {x, i64({3})}), UserError);
}

TEST(GatherOp, ElementsAndNd) {
  const Tensor x = iota_f32({2, 2});
  Attrs a;
  a.set("axis", int64_t{1});
  const Tensor idx = Tensor::from_vector<int64_t>({2, 2}, {1, 0, -1, 1});
  EXPECT_EQ(values(run_op("GatherElements", {x, idx}, a)[0]), (std::vector<double>{1, 0, 3, 3}));
  const Tensor nd = Tensor::from_vector<int64_t>({2, 1}, {1, 0});
  EXPECT_EQ(values(run_op("GatherND", {x, nd})[0]), (std::vector<double>{2, 3, 0, 1}));
  Attrs b;
  b.set("batch_dims", int64_t{1});
  EXPECT_EQ(values(run_op("GatherND", {x, nd}, b)[0]), (std::vector<double>{1, 2}));
}

TEST(ScatterOp, ReductionsAccumulateDuplicates) {
  const Tensor x = Tensor::from_vector<float>({3}, {1, 2, 3});
  const Tensor idx = i64({0, 0, -1});
  const Tensor up = Tensor::from_vector<float>({3}, {5, 7, 4});
  auto scatter = [&](const char* r) {
    Attrs a;
    a.set("reduction", std::string(r));
    return values(run_op("ScatterElements", {x, idx, up}, a)[0]);
  };
  EXPECT_EQ(scatter("add"), (std::vector<double>{13, 2, 7}));
  EXPECT_EQ(scatter("mul"), (std::vector<double>{35, 2, 12}));
  EXPECT_EQ(scatter("max"), (std::vector<double>{7, 2, 4}));
  EXPECT_EQ(scatter("min"), (std::vector<double>{1, 2, 3}));
  EXPECT_THROW(scatter("avg"), UserError);
  const Tensor nd = Tensor::from_vector<int64_t>({1, 1}, {1});
  const Tensor row = Tensor::from_vector<float>({1, 2}, {9, 8});
  EXPECT_EQ(values(run_op("ScatterND", {iota_f32({2, 2}), nd, row})[0]),
            (std::vector<double>{0, 1, 9, 8}));
}

TEST(TopKOp, StableTiesAndSmallest) {
  const Tensor x = Tensor::from_vector<float>({6}, {1, 3, 3, 2, 3, 1});
  auto top = run_op("TopK", {x, i64({4})}, {}, 2);
  EXPECT_EQ(values(top[0]), (std::vector<double>{3, 3, 3, 2}));
  EXPECT_EQ(values(top[1]), (std::vector<double>{1, 2, 4, 3}));
  Attrs s;
  s.set("largest", int64_t{0});
  top = run_op("TopK", {x, i64({4})}, s, 2);
  EXPECT_EQ(values(top[0]), (std::vector<double>{1, 1, 2, 3}));
  EXPECT_EQ(values(top[1]), (std::vector<double>{0, 5, 3, 1}));
  // Along axis 0 of a matrix.
  Attrs a;
  a.set("axis", int64_t{0});
  top = run_op("TopK", {Tensor::from_vector<float>({2, 2}, {1, 4, 3, 2}), i64({1})}, a, 2);
  EXPECT_EQ(values(top[0]), (std::vector<double>{3, 4}));
  EXPECT_EQ(values(top[1]), (std::vector<double>{1, 0}));
  EXPECT_THROW(run_op("TopK", {x, i64({7})}, {}, 2), UserError);
}

TEST(NonZeroOp, IndicesPerDim) {
  const Tensor x = Tensor::from_vector<float>({2, 2}, {0, 5, 7, 0});
  const Tensor r = run_op("NonZero", {x})[0];
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{0, 1, 1, 0}));
}

TEST(TriluOp, UpperLowerWithK) {
  const Tensor x = iota_f32({2, 3});
  EXPECT_EQ(values(run_op("Trilu", {x})[0]), (std::vector<double>{0, 1, 2, 0, 4, 5}));
  Attrs lower;
  lower.set("upper", int64_t{0});
  EXPECT_EQ(values(run_op("Trilu", {x, Tensor::scalar<int64_t>(-1)}, lower)[0]),
            (std::vector<double>{0, 0, 0, 3, 0, 0}));
  EXPECT_EQ(values(run_op("Trilu", {x, Tensor::scalar<int64_t>(INT64_MIN)})[0]), values(x));
}
