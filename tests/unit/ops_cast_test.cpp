// Cast, Where, and the Cast / CastLike converters.
#include <cmath>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

Attrs to(const char* name) {
  Attrs a;
  a.set("to", std::string(name));
  return a;
}

}  // namespace

TEST(CastOp, ConvertsElements) {
  Tensor x = Tensor::from_vector<float>({4}, {1.7f, -1.7f, 0.0f, 65520.0f});
  Tensor i = run_op_exact("Cast", {x}, to("int32"))[0];
  ASSERT_EQ(i.dtype(), DType::kInt32);
  expect_near(i, {1, -1, 0, 65520});
  Tensor h = run_op_exact("Cast", {x}, to("float16"))[0];
  ASSERT_EQ(h.dtype(), DType::kFloat16);
  // 1.7 -> 1.7001953125 (nearest half); 65520 rounds to infinity in half precision.
  expect_near(h, {1.7001953125, -1.7001953125, 0, INFINITY}, 0);
  Tensor b = run_op_exact("Cast", {x}, to("bool"))[0];
  expect_near(b, {1, 1, 0, 1});
  Tensor bf =
      run_op_exact("Cast", {Tensor::from_vector<float>({1}, {1.00390625f})}, to("bfloat16"))[0];
  // 1 + 2^-8 is halfway between two bfloat16 values: ties to even gives 1.
  expect_near(bf, {1.0}, 0);
}

TEST(CastOp, RejectsUnknownTarget) {
  EXPECT_THROW(run_op_exact("Cast", {Tensor::scalar<float>(1)}, to("string")), UserError);
  EXPECT_THROW(run_op_exact("Cast", {Tensor::scalar<float>(1)}), UserError);  // no "to"
}

TEST(CastOp, InferenceKeepsDims) {
  TensorType t(DType::kFloat32, {Dim::sym("batch"), Dim(4)});
  TensorType r = infer_op("Cast", {t}, {}, to("int64"))[0];
  EXPECT_EQ(r.str(), "int64[batch, 4]");
}

TEST(WhereOp, BroadcastsAllThree) {
  Tensor c = Tensor::from_vector<bool>({2, 1}, {true, false});
  Tensor x = Tensor::from_vector<int64_t>({1, 3}, {1, 2, 3});
  Tensor y = Tensor::scalar<int64_t>(-1);
  Tensor r = run_op_exact("Where", {c, x, y})[0];
  ASSERT_EQ(r.shape(), (Shape{2, 3}));
  expect_near(r, {1, 2, 3, -1, -1, -1});
}

TEST(WhereOp, ChecksTypes) {
  Tensor f = Tensor::scalar<float>(1);
  EXPECT_THROW(run_op_exact("Where", {f, f, f}), UserError);
  EXPECT_THROW(run_op_exact("Where", {Tensor::scalar<bool>(true), f, Tensor::scalar<double>(1)}),
               UserError);
  EXPECT_THROW(run_op_exact("Where", {Tensor::from_vector<bool>({2}, {true, false}),
                                      Tensor::from_vector<float>({3}, {1, 2, 3}), f}),
               UserError);
}

TEST(WhereOp, InferenceBroadcastsSymbols) {
  TensorType c(DType::kBool, {Dim(1), Dim::sym("h")});
  TensorType x(DType::kFloat32, {Dim::sym("batch"), Dim(1)});
  TensorType y(DType::kFloat32, {Dim(1)});
  EXPECT_EQ(infer_op("Where", {c, x, y})[0].str(), "float32[batch, h]");
}

TEST(CastConverters, MapOnnxCodes) {
  auto m = one_node_model("Cast", 13, {{"x", onnx::TensorProto::FLOAT, {2}}}, {"x"});
  add_attr(m, "to", int64_t{onnx::TensorProto::INT64});
  auto g = import_model(m);
  EXPECT_EQ(g->nodes()[0]->attrs.get_string("to"), "int64");
  EXPECT_EQ(g->outputs[0]->type.dtype, DType::kInt64);

  auto s = one_node_model("Cast", 13, {{"x", onnx::TensorProto::FLOAT, {2}}}, {"x"});
  add_attr(s, "to", int64_t{onnx::TensorProto::STRING});
  EXPECT_THROW(import_model(s), UserError);
}

TEST(CastConverters, CastLikeBecomesCast) {
  auto m = one_node_model(
      "CastLike", 15,
      {{"x", onnx::TensorProto::FLOAT, {2}}, {"like", onnx::TensorProto::FLOAT16, {1}}},
      {"x", "like"});
  auto g = import_model(m);
  ASSERT_EQ(g->num_nodes(), 1u);
  EXPECT_EQ(g->nodes()[0]->op, "Cast");
  EXPECT_EQ(g->nodes()[0]->inputs.size(), 1u);
  EXPECT_EQ(g->nodes()[0]->attrs.get_string("to"), "float16");
}
