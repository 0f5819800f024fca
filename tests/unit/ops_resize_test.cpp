// Resize on hand-computed cases: every mode, the coordinate transformations that differ, crop
// with extrapolation, keep_aspect_ratio_policy and shape inference.
#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

Tensor scales(std::vector<float> s) { return tensor<float>({static_cast<int64_t>(s.size())}, s); }
Attrs resize_attrs(const std::string& mode, const std::string& coord) {
  Attrs a;
  a.set("mode", mode);
  a.set("coordinate_transformation_mode", coord);
  return a;
}

const Tensor kRow = tensor<float>({1, 1, 1, 2}, {0, 4});

}  // namespace

TEST(Resize, NearestAsymmetricUpsample) {
  auto y = run_op("Resize", {kRow, Tensor(), scales({1, 1, 2, 2})},
                  resize_attrs("nearest", "asymmetric"));
  expect_values(y[0], {1, 1, 2, 4}, {0, 0, 4, 4, 0, 0, 4, 4});
}

TEST(Resize, NearestModes) {
  // half_pixel, 2 -> 3: sources -1/6, 1/2, 7/6.
  Attrs a = resize_attrs("nearest", "half_pixel");
  expect_values(run_op("Resize", {kRow, Tensor(), Tensor(), i64({1, 1, 1, 3})}, a)[0], {1, 1, 1, 3},
                {0, 0, 4});
  a.set("nearest_mode", std::string("round_prefer_ceil"));
  expect_values(run_op("Resize", {kRow, Tensor(), Tensor(), i64({1, 1, 1, 3})}, a)[0], {1, 1, 1, 3},
                {0, 4, 4});
  a.set("nearest_mode", std::string("ceil"));
  expect_values(run_op("Resize", {kRow, Tensor(), Tensor(), i64({1, 1, 1, 3})}, a)[0], {1, 1, 1, 3},
                {0, 4, 4});
}

TEST(Resize, LinearCoordinateModes) {
  // half_pixel x2: sources -0.25, 0.25, 0.75, 1.25 (clamped at the edges).
  expect_values(run_op("Resize", {kRow, Tensor(), scales({1, 1, 1, 2})},
                       resize_attrs("linear", "half_pixel"))[0],
                {1, 1, 1, 4}, {0, 1, 3, 4});
  expect_values(run_op("Resize", {kRow, Tensor(), scales({1, 1, 1, 2})},
                       resize_attrs("linear", "asymmetric"))[0],
                {1, 1, 1, 4}, {0, 2, 4, 4});
  expect_values(run_op("Resize", {kRow, Tensor(), Tensor(), i64({1, 1, 1, 3})},
                       resize_attrs("linear", "align_corners"))[0],
                {1, 1, 1, 3}, {0, 2, 4});
}

TEST(Resize, BilinearMixesBothAxes) {
  auto x = tensor<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  auto y = run_op("Resize", {x, Tensor(), Tensor(), i64({1, 1, 3, 3})},
                  resize_attrs("linear", "align_corners"));
  expect_values(y[0], {1, 1, 3, 3}, {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
}

TEST(Resize, CubicReproducesALineInTheInterior) {
  // With A = -0.5 the cubic kernel interpolates linear data exactly away from the borders.
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(i);
  Attrs a = resize_attrs("cubic", "asymmetric");
  a.set("cubic_coeff_a", -0.5f);
  auto y = run_op("Resize", {tensor<float>({1, 8}, v), Tensor(), scales({1, 2})}, a);
  ASSERT_EQ(y[0].shape(), (Shape{1, 16}));
  const float* p = y[0].data<float>();
  for (int i = 2; i < 12; ++i) EXPECT_NEAR(p[i], i / 2.0, 1e-5) << i;
}

TEST(Resize, CropAndResizeExtrapolates) {
  auto x = tensor<float>({1, 3}, {1, 2, 3});
  Attrs a = resize_attrs("linear", "tf_crop_and_resize");
  a.set("extrapolation_value", 9.0f);
  // Width roi [-1, 1] samples at -2, 0, 2.
  auto y = run_op("Resize", {x, tensor<float>({4}, {0, -1, 1, 1}), Tensor(), i64({1, 3})}, a);
  expect_values(y[0], {1, 3}, {9, 1, 3});
}

TEST(Resize, AxesAndKeepAspectRatio) {
  auto x = tensor<float>({1, 1, 2, 1}, {1, 2});
  Attrs a = resize_attrs("nearest", "asymmetric");
  a.set("axes", std::vector<int64_t>{2, 3});
  a.set("keep_aspect_ratio_policy", std::string("not_larger"));
  auto y = run_op("Resize", {x, Tensor(), Tensor(), i64({4, 4})}, a);
  expect_values(y[0], {1, 1, 4, 2}, {1, 1, 1, 1, 2, 2, 2, 2});
  a.set("keep_aspect_ratio_policy", std::string("not_smaller"));
  EXPECT_EQ(run_op("Resize", {x, Tensor(), Tensor(), i64({4, 4})}, a)[0].shape(),
            (Shape{1, 1, 8, 4}));
}

TEST(Resize, InferenceAndErrors) {
  TensorType x(DType::kFloat32, {Dim::sym("batch"), 256, 20, 20});
  auto t =
      infer_op("Resize", {x, TensorType(), TensorType::of(scales({1, 1, 2, 2}))},
               {Tensor(), Tensor(), scales({1, 1, 2, 2})}, resize_attrs("nearest", "asymmetric"));
  EXPECT_EQ(t[0].str(), "float32[batch, 256, 40, 40]");
  auto u = infer_op("Resize", {x, TensorType(), TensorType(), TensorType(DType::kInt64, {4})}, {},
                    resize_attrs("nearest", "asymmetric"));
  EXPECT_EQ(u[0].rank(), 4);
  EXPECT_FALSE(u[0].dims[2].known());
  EXPECT_THROW(run_op("Resize", {kRow, Tensor(), scales({2, 2})}), UserError);
  EXPECT_THROW(run_op("Resize", {kRow}), UserError);
  // A scale whose output size does not fit an int64 (found by fuzzing the importer: undefined
  // behaviour in the float-to-integer conversion).
  EXPECT_THROW(run_op("Resize", {kRow, Tensor(), scales({1, 1, 1, 3e38f})}), UserError);
  EXPECT_THROW(
      run_op("Resize", {kRow, Tensor(), scales({1, 1, 1, 2})}, resize_attrs("area", "half_pixel")),
      UserError);
}
