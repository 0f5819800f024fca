// Reshape, Flatten, Squeeze, Unsqueeze, Expand, Transpose, DepthToSpace, SpaceToDepth.
// Expected values are hand-computed (numpy semantics).
#include <gtest/gtest.h>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

TEST(ReshapeOp, ZeroCopiesMinusOneInfers) {
  const Tensor x = iota_f32({2, 3, 4});
  EXPECT_EQ(run_op("Reshape", {x, i64({0, -1})})[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(run_op("Reshape", {x, i64({-1, 0, 2})})[0].shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(values(run_op("Reshape", {x, i64({24})})[0]), values(x));
  // allowzero: a 0 is a real 0 (only valid for empty tensors).
  Attrs az;
  az.set("allowzero", int64_t{1});
  EXPECT_EQ(run_op("Reshape", {Tensor(DType::kFloat32, {0, 3}), i64({3, 0})}, az)[0].shape(),
            (Shape{3, 0}));
  EXPECT_THROW(run_op("Reshape", {x, i64({5, -1})}), UserError);
  EXPECT_THROW(run_op("Reshape", {x, i64({-1, -1})}), UserError);
  EXPECT_THROW(run_op("Reshape", {x, i64({2, 3, 4, 0})}), UserError);
}

TEST(ReshapeOp, InferenceWithUnknownTargetKeepsRank) {
  const TensorType x(DType::kFloat32, {Dim::sym("batch"), 3, 4});
  // Target computed at run time: only its length is known.
  const auto t = infer_op("Reshape", {x, TensorType(DType::kInt64, {3})});
  EXPECT_EQ(t[0], TensorType(DType::kFloat32, {Dim(), Dim(), Dim()}));
  // Constant target with a 0 keeps the symbolic batch.
  const auto c = infer_op("Reshape", {x, {}}, {Tensor(), i64({0, -1})});
  EXPECT_EQ(c[0], TensorType(DType::kFloat32, {Dim::sym("batch"), 12}));
  EXPECT_THROW(
      infer_op("Reshape", {TensorType(DType::kFloat32, {2, 3}), {}}, {Tensor(), i64({4, 2})}),
      UserError);
}

TEST(ReshapeOp, FlattenAxes) {
  const Tensor x = iota_f32({2, 3, 4});
  EXPECT_EQ(run_op("Flatten", {x})[0].shape(), (Shape{2, 12}));
  Attrs a0;
  a0.set("axis", int64_t{0});
  EXPECT_EQ(run_op("Flatten", {x}, a0)[0].shape(), (Shape{1, 24}));
  Attrs an;
  an.set("axis", int64_t{-1});
  EXPECT_EQ(run_op("Flatten", {x}, an)[0].shape(), (Shape{6, 4}));
  Attrs bad;
  bad.set("axis", int64_t{4});
  EXPECT_THROW(run_op("Flatten", {x}, bad), UserError);
  const auto t = infer_op("Flatten", {TensorType(DType::kFloat32, {Dim::sym("b"), 2, 3})});
  EXPECT_EQ(t[0], TensorType(DType::kFloat32, {Dim::sym("b"), 6}));
}

TEST(ReshapeOp, SqueezeUnsqueeze) {
  const Tensor x = iota_f32({1, 3, 1, 2});
  EXPECT_EQ(run_op("Squeeze", {x})[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(run_op("Squeeze", {x, i64({-2})})[0].shape(), (Shape{1, 3, 2}));
  EXPECT_THROW(run_op("Squeeze", {x, i64({1})}), UserError);
  const Tensor y = iota_f32({3, 2});
  EXPECT_EQ(run_op("Unsqueeze", {y, i64({0, -1})})[0].shape(), (Shape{1, 3, 2, 1}));
  EXPECT_EQ(run_op("Unsqueeze", {y, i64({3, 1})})[0].shape(), (Shape{3, 1, 2, 1}));
  EXPECT_THROW(run_op("Unsqueeze", {y, i64({1, 1})}), UserError);
  EXPECT_THROW(run_op("Unsqueeze", {y, i64({4})}), UserError);
  // Squeeze of all size-1 dims is undecidable with a symbolic dim: unranked, no error.
  const auto t = infer_op("Squeeze", {TensorType(DType::kFloat32, {Dim::sym("b"), 1})});
  EXPECT_FALSE(t[0].has_rank);
}

TEST(ReshapeOp, ExpandBroadcastsBothWays) {
  const Tensor x = Tensor::from_vector<float>({3, 1}, {1, 2, 3});
  const Tensor e = run_op("Expand", {x, i64({2, 1, 2})})[0];
  EXPECT_EQ(e.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values(e), (std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EXPECT_THROW(run_op("Expand", {x, i64({2, 2})}), UserError);
}

TEST(ReshapeOp, TransposeDefaultAndPerm) {
  const Tensor x = iota_f32({2, 3});
  const Tensor t = run_op("Transpose", {x})[0];
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Attrs a;
  a.set("perm", std::vector<int64_t>{1, 2, 0});
  const Tensor u = run_op("Transpose", {iota_f32({2, 1, 3})}, a)[0];
  EXPECT_EQ(u.shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(values(u), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Attrs bad;
  bad.set("perm", std::vector<int64_t>{0, 0});
  EXPECT_THROW(run_op("Transpose", {x}, bad), UserError);
}

TEST(ReshapeOp, DepthToSpaceModesAndInverse) {
  // [1, 4, 1, 1] with blocksize 2: DCR puts channel c at (c / 2, c % 2) of the 2x2 block.
  const Tensor x = Tensor::from_vector<float>({1, 4, 1, 1}, {0, 1, 2, 3});
  Attrs a;
  a.set("blocksize", int64_t{2});
  const Tensor d = run_op("DepthToSpace", {x}, a)[0];
  EXPECT_EQ(d.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values(d), (std::vector<double>{0, 1, 2, 3}));
  // [1, 8, 1, 1] -> [1, 2, 2, 2]: DCR takes channels c + 2 * (block pos), CRD c * 4 + pos.
  const Tensor y = iota_f32({1, 8, 1, 1});
  EXPECT_EQ(values(run_op("DepthToSpace", {y}, a)[0]),
            (std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7}));
  Attrs crd = a;
  crd.set("mode", std::string("CRD"));
  EXPECT_EQ(values(run_op("DepthToSpace", {y}, crd)[0]), values(y));
  // SpaceToDepth inverts DCR DepthToSpace.
  const Tensor z = iota_f32({1, 2, 4, 6});
  const Tensor s = run_op("SpaceToDepth", {z}, a)[0];
  EXPECT_EQ(s.shape(), (Shape{1, 8, 2, 3}));
  EXPECT_EQ(values(run_op("DepthToSpace", {s}, a)[0]), values(z));
  // SpaceToDepth-28's CRD mode inverts CRD DepthToSpace: [1, 2, 2, 2] -> [1, 8, 1, 1] with
  // channel c * 4 + (block pos) in CRD, (block pos) * 2 + c in DCR.
  const Tensor w = iota_f32({1, 2, 2, 2});
  EXPECT_EQ(values(run_op("SpaceToDepth", {w}, crd)[0]), values(w));
  EXPECT_EQ(values(run_op("SpaceToDepth", {w}, a)[0]), (std::vector<double>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(values(run_op("DepthToSpace", {run_op("SpaceToDepth", {z}, crd)[0]}, crd)[0]), values(z));
  Attrs bad = a;
  bad.set("mode", std::string("XYZ"));
  EXPECT_THROW(run_op("SpaceToDepth", {z}, bad), UserError);
}
