// Concat, Split, Slice, Tile. Expected values are hand-computed (numpy semantics).
#include <gtest/gtest.h>

#include <limits>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Attrs axis(int64_t a) {
  Attrs r;
  r.set("axis", a);
  return r;
}
}  // namespace

TEST(ConcatOp, JoinsAlongAxis) {
  const Tensor a = Tensor::from_vector<float>({2, 1}, {1, 2});
  const Tensor b = Tensor::from_vector<float>({2, 2}, {3, 4, 5, 6});
  const Tensor c = run_op("Concat", {a, b}, axis(-1))[0];
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(c), (std::vector<double>{1, 3, 4, 2, 5, 6}));
  EXPECT_THROW(run_op("Concat", {a, b}, axis(0)), UserError);
  const auto t = infer_op("Concat",
                          {TensorType(DType::kFloat32, {Dim::sym("b"), 2}),
                           TensorType(DType::kFloat32, {Dim::sym("b"), Dim()})},
                          {}, axis(1));
  EXPECT_EQ(t[0], TensorType(DType::kFloat32, {Dim::sym("b"), Dim()}));
}

TEST(SplitOp, SizesNumOutputsAndUnevenLastChunk) {
  const Tensor x = iota_f32({5});
  auto parts = run_op("Split", {x, i64({1, 4})}, {}, 2);
  EXPECT_EQ(values(parts[1]), (std::vector<double>{1, 2, 3, 4}));
  // ceil(5 / 3) = 2: chunks of 2, 2, 1 (as ONNX Runtime).
  Attrs n3;
  n3.set("num_outputs", int64_t{3});
  parts = run_op("Split", {x}, n3, 3);
  EXPECT_EQ(parts[0].numel(), 2);
  EXPECT_EQ(parts[1].numel(), 2);
  EXPECT_EQ(values(parts[2]), (std::vector<double>{4}));
  // No sizes: as many parts as outputs.
  parts = run_op("Split", {iota_f32({2, 4})}, axis(1), 2);
  EXPECT_EQ(values(parts[1]), (std::vector<double>{2, 3, 6, 7}));
  EXPECT_THROW(run_op("Split", {x, i64({1, 1})}, {}, 2), UserError);
}

TEST(SliceOp, ClampsLikeTheSpec) {
  const Tensor x = iota_f32({5});
  auto slice = [&](std::vector<int64_t> s, std::vector<int64_t> e, std::vector<int64_t> st) {
    return values(run_op("Slice", {x, i64(s), i64(e), i64({0}), i64(st)})[0]);
  };
  EXPECT_EQ(slice({1}, {kMax}, {1}), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(slice({-2}, {kMax}, {1}), (std::vector<double>{3, 4}));
  EXPECT_EQ(slice({-100}, {2}, {1}), (std::vector<double>{0, 1}));
  EXPECT_EQ(slice({kMax}, {kMin}, {-1}), (std::vector<double>{4, 3, 2, 1, 0}));
  EXPECT_EQ(slice({-1}, {-100}, {-2}), (std::vector<double>{4, 2, 0}));
  EXPECT_EQ(slice({3}, {1}, {1}), std::vector<double>{});
  EXPECT_EQ(slice({10}, {20}, {1}), std::vector<double>{});
  EXPECT_EQ(slice({0}, {5}, {3}), (std::vector<double>{0, 3}));
  EXPECT_THROW(slice({0}, {5}, {0}), UserError);
}

TEST(SliceOp, TwoDimsDefaultAxesAndInference) {
  const Tensor x = iota_f32({3, 4});
  const Tensor y = run_op("Slice", {x, i64({1, -1}), i64({3, 0}), i64({0, 1}), i64({1, -2})})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{7, 5, 11, 9}));
  // A whole-dim slice keeps a symbol; a partial one of an unknown dim is unknown.
  const TensorType t(DType::kFloat32, {Dim::sym("b"), Dim::sym("n")});
  const auto r =
      infer_op("Slice", {t, {}, {}, {}}, {Tensor(), i64({0, 1}), i64({kMax, 3}), i64({0, 1})});
  EXPECT_EQ(r[0], TensorType(DType::kFloat32, {Dim::sym("b"), Dim()}));
}

TEST(TileOp, Repeats) {
  const Tensor x = Tensor::from_vector<float>({2, 1}, {1, 2});
  const Tensor t = run_op("Tile", {x, i64({2, 3})})[0];
  EXPECT_EQ(t.shape(), (Shape{4, 3}));
  EXPECT_EQ(values(t), (std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  EXPECT_THROW(run_op("Tile", {x, i64({2})}), UserError);
}
