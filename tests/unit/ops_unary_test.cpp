// Unary elementwise ops: values hand-computed (or from numpy), integer edge cases, type checks,
// symbolic inference.
#include <cmath>
#include <limits>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST(UnaryOps, AreElementwise) {
  for (const char* op :
       {"Abs",   "Neg",   "Exp",   "Log", "Sqrt", "Reciprocal", "Floor", "Ceil",    "Round",
        "Sign",  "Sin",   "Cos",   "Tan", "Asin", "Acos",       "Atan",  "Sinh",    "Cosh",
        "Asinh", "Acosh", "Atanh", "Erf", "Not",  "IsNaN",      "IsInf", "Identity"}) {
    const OpDef* d = OpRegistry::global().find(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_TRUE(d->has(kTraitElementwise)) << op;
  }
}

TEST(UnaryOps, RoundHalvesToEven) {
  Tensor x = Tensor::from_vector<float>({7}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.4f, -2.6f});
  expect_near(run_op_exact("Round", {x})[0], {0, 2, 2, 0, -2, 2, -3});
}

TEST(UnaryOps, FloorCeilReciprocalSqrt) {
  Tensor x = Tensor::from_vector<float>({3}, {-1.5f, 0.25f, 4.0f});
  expect_near(run_op_exact("Floor", {x})[0], {-2, 0, 4});
  expect_near(run_op_exact("Ceil", {x})[0], {-1, 1, 4});
  expect_near(run_op_exact("Reciprocal", {x})[0], {-2.0 / 3.0, 4, 0.25});
  expect_near(run_op_exact("Sqrt", {x})[0], {kNaN, 0.5, 2});
}

TEST(UnaryOps, TranscendentalMatchesNumpy) {
  Tensor x = Tensor::from_vector<double>({2}, {0.5, -0.25});
  // numpy: np.exp, np.log(abs), np.sin, np.arctanh, scipy.special.erf of [0.5, -0.25]
  expect_near(run_op_exact("Exp", {x})[0], {1.6487212707001282, 0.7788007830714049}, 1e-12);
  expect_near(run_op_exact("Sin", {x})[0], {0.479425538604203, -0.24740395925452294}, 1e-12);
  expect_near(run_op_exact("Atanh", {x})[0], {0.5493061443340549, -0.25541281188299536}, 1e-12);
  expect_near(run_op_exact("Erf", {x})[0], {0.5204998778130465, -0.2763263901682369}, 1e-12);
  expect_near(run_op_exact("Acosh", {x})[0], {kNaN, kNaN});
}

TEST(UnaryOps, Float16ComputesAndRoundsOnce) {
  Tensor x = Tensor::from_vector<Half>({2}, {Half(1.0f), Half(-2.0f)});
  Tensor y = run_op_exact("Exp", {x})[0];
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  // e = 2.71875 in half precision, e^-2 = 0.13537597... -> 0.1353759765625
  expect_near(y, {2.71875, 0.1353759765625}, 0);
}

TEST(UnaryOps, IntegerAbsNegWrapLikeOnnxRuntime) {
  Tensor x = Tensor::from_vector<int8_t>({4}, {-3, 0, 5, -128});
  expect_near(run_op_exact("Abs", {x})[0], {3, 0, 5, -128});
  Tensor y = Tensor::from_vector<int64_t>({2}, {7, std::numeric_limits<int64_t>::min()});
  Tensor ny = run_op_exact("Neg", {y})[0];
  EXPECT_EQ(ny.data<int64_t>()[0], -7);
  EXPECT_EQ(ny.data<int64_t>()[1], std::numeric_limits<int64_t>::min());
  Tensor u = Tensor::from_vector<uint32_t>({2}, {0, 7});
  expect_near(run_op_exact("Abs", {u})[0], {0, 7});
}

TEST(UnaryOps, Sign) {
  expect_near(run_op_exact("Sign", {Tensor::from_vector<float>({4}, {-2.0f, 0.0f, 3.0f, NAN})})[0],
              {-1, 0, 1, kNaN});
  expect_near(run_op_exact("Sign", {Tensor::from_vector<int32_t>({3}, {-9, 0, 4})})[0], {-1, 0, 1});
}

TEST(UnaryOps, NotIsNaNIsInf) {
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  Tensor nb = run_op_exact("Not", {b})[0];
  EXPECT_FALSE(nb.data<bool>()[0]);
  EXPECT_TRUE(nb.data<bool>()[1]);

  Tensor x = Tensor::from_vector<float>({4}, {kInf, -kInf, 1.0f, NAN});
  Tensor nan = run_op_exact("IsNaN", {x})[0];
  ASSERT_EQ(nan.dtype(), DType::kBool);
  expect_near(nan, {0, 0, 0, 1});
  expect_near(run_op_exact("IsInf", {x})[0], {1, 1, 0, 0});
  Attrs only_neg;
  only_neg.set("detect_positive", int64_t{0});
  expect_near(run_op_exact("IsInf", {x}, only_neg)[0], {0, 1, 0, 0});
  Attrs only_pos;
  only_pos.set("detect_negative", int64_t{0});
  expect_near(run_op_exact("IsInf", {x}, only_pos)[0], {1, 0, 0, 0});
}

TEST(UnaryOps, IdentityKeepsTypeAndData) {
  Tensor x = Tensor::from_vector<int64_t>({2}, {3, 4});
  Tensor y = run_op_exact("Identity", {x})[0];
  EXPECT_EQ(y.data<int64_t>()[1], 4);
}

TEST(UnaryOps, RejectWrongElementTypes) {
  EXPECT_THROW(run_op_exact("Sqrt", {Tensor::from_vector<int32_t>({1}, {4})}), UserError);
  EXPECT_THROW(run_op_exact("Not", {Tensor::from_vector<float>({1}, {1})}), UserError);
  EXPECT_THROW(run_op_exact("Neg", {Tensor::from_vector<uint8_t>({1}, {1})}), UserError);
  EXPECT_THROW(run_op_exact("IsNaN", {Tensor::from_vector<int32_t>({1}, {1})}), UserError);
}

TEST(UnaryOps, InferenceKeepsSymbolicDims) {
  TensorType t(DType::kFloat32, {Dim::sym("batch"), Dim(3), Dim()});
  EXPECT_EQ(infer_op("Exp", {t})[0], t);
  TensorType b = infer_op("IsInf", {t})[0];
  EXPECT_EQ(b.dtype, DType::kBool);
  EXPECT_EQ(b.dims, t.dims);
  EXPECT_FALSE(infer_op("Abs", {TensorType::unranked(DType::kInt32)})[0].has_rank);
}

TEST(UnaryConverters, ImportPassThrough) {
  auto m = one_node_model("Erf", 13, {{"x", onnx::TensorProto::FLOAT, {-1, 4}}}, {"x"});
  auto g = import_model(m);
  ASSERT_EQ(g->num_nodes(), 1u);
  EXPECT_EQ(g->nodes()[0]->op, "Erf");
  EXPECT_EQ(g->outputs[0]->type.str(), "float32[n, 4]");
  // Round exists from opset 11 only.
  auto old = one_node_model("Round", 10, {{"x", onnx::TensorProto::FLOAT, {2}}}, {"x"});
  EXPECT_THROW(import_model(old), UserError);
}
