// Reductions and ArgMax/ArgMin: values hand-computed, keepdims/noop/axes handling, integer wrap,
// empty reductions, inference with symbols and run-time axes, converters.
#include <cmath>
#include <limits>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

Attrs keep(int64_t k, int64_t noop = 0) {
  Attrs a;
  a.set("keepdims", k);
  if (noop) a.set("noop_with_empty_axes", noop);
  return a;
}

// [[1, 2, 3], [4, 5, 6]]
Tensor m23() { return Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}); }

}  // namespace

TEST(ReduceOps, AreReductions) {
  for (const char* op :
       {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin"}) {
    const OpDef* d = OpRegistry::global().find(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_TRUE(d->has(kTraitReduction)) << op;
  }
}

TEST(ReduceOps, AlongOneAxis) {
  auto r = [&](const char* op, int64_t k = 0) {
    return run_op_exact(op, {m23(), constant(i64({1}))}, keep(k))[0];
  };
  Tensor s = r("ReduceSum", 1);
  EXPECT_EQ(s.shape(), (Shape{2, 1}));
  expect_near(s, {6, 15});
  EXPECT_EQ(r("ReduceSum").shape(), (Shape{2}));
  expect_near(r("ReduceMean"), {2, 5});
  expect_near(r("ReduceMax"), {3, 6});
  expect_near(r("ReduceMin"), {1, 4});
  expect_near(r("ReduceProd"), {6, 120});
  expect_near(r("ReduceL1"), {6, 15});
  expect_near(r("ReduceL2"), {std::sqrt(14.0), std::sqrt(77.0)}, 1e-6);
  expect_near(r("ReduceSumSquare"), {14, 77});
  expect_near(r("ReduceLogSum"), {std::log(6.0), std::log(15.0)}, 1e-6);
  // log(e + e^2 + e^3) = 3.40760596444438
  expect_near(r("ReduceLogSumExp"), {3.40760596444438, 6.40760596444438}, 1e-5);
}

TEST(ReduceOps, AxesOmittedOrEmpty) {
  Tensor all = run_op_exact("ReduceSum", {m23()})[0];
  EXPECT_EQ(all.shape(), (Shape{1, 1}));
  expect_near(all, {21});
  expect_near(run_op_exact("ReduceMean", {m23(), constant(i64({}))}, keep(0))[0], {3.5});
  // noop_with_empty_axes: the input unchanged.
  Tensor same = run_op_exact("ReduceSum", {m23(), constant(i64({}))}, keep(1, 1))[0];
  EXPECT_EQ(same.shape(), (Shape{2, 3}));
  expect_near(same, {1, 2, 3, 4, 5, 6});
  // Negative axes, several axes.
  Tensor x = Tensor::from_vector<double>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_near(run_op_exact("ReduceSum", {x, constant(i64({0, -1}))}, keep(0))[0],
              {1 + 2 + 5 + 6, 3 + 4 + 7 + 8});
}

TEST(ReduceOps, LogSumExpIsStable) {
  Tensor x = Tensor::from_vector<float>({2}, {1000, 1000});
  expect_near(run_op_exact("ReduceLogSumExp", {x})[0], {1000 + std::log(2.0)}, 1e-3);
}

TEST(ReduceOps, MaxPropagatesNaN) {
  Tensor x = Tensor::from_vector<float>({3}, {1, NAN, 3});
  EXPECT_TRUE(std::isnan(run_op_exact("ReduceMax", {x})[0].data<float>()[0]));
}

TEST(ReduceOps, IntegersWrapAndStayExact) {
  Tensor x = Tensor::from_vector<int32_t>({2}, {std::numeric_limits<int32_t>::max(), 1});
  EXPECT_EQ(run_op_exact("ReduceSum", {x})[0].data<int32_t>()[0],
            std::numeric_limits<int32_t>::min());
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor y = Tensor::from_vector<int64_t>({2}, {big, 2});
  EXPECT_EQ(run_op_exact("ReduceSum", {y})[0].data<int64_t>()[0], big + 2);
  EXPECT_EQ(run_op_exact("ReduceMax", {y})[0].data<int64_t>()[0], big);
  Tensor z = Tensor::from_vector<int8_t>({3}, {-3, 2, -1});
  EXPECT_EQ(run_op_exact("ReduceL1", {z})[0].data<int8_t>()[0], 6);
  EXPECT_EQ(run_op_exact("ReduceProd", {z})[0].data<int8_t>()[0], 6);
  EXPECT_EQ(run_op_exact("ReduceMean", {z})[0].data<int8_t>()[0], 0);  // -2 / 3 truncates
}

TEST(ReduceOps, BoolMaxMinOnly) {
  Tensor b = Tensor::from_vector<bool>({3}, {false, true, false});
  EXPECT_TRUE(run_op_exact("ReduceMax", {b})[0].data<bool>()[0]);
  EXPECT_FALSE(run_op_exact("ReduceMin", {b})[0].data<bool>()[0]);
  EXPECT_THROW(run_op_exact("ReduceSum", {b}), UserError);
}

TEST(ReduceOps, EmptyReductions) {
  Tensor x(DType::kFloat32, {0, 2});
  auto r = [&](const char* op) { return run_op_exact(op, {x, constant(i64({0}))}, keep(0))[0]; };
  expect_near(r("ReduceSum"), {0, 0});
  expect_near(r("ReduceProd"), {1, 1});
  expect_near(r("ReduceMax"), {-INFINITY, -INFINITY});
  expect_near(r("ReduceLogSumExp"), {-INFINITY, -INFINITY});
  expect_near(r("ReduceMean"), {NAN, NAN});
}

TEST(ReduceOps, BadAxes) {
  EXPECT_THROW(run_op_exact("ReduceSum", {m23(), constant(i64({2}))}), UserError);
  EXPECT_THROW(run_op_exact("ReduceSum", {m23(), constant(i64({1, -1}))}), UserError);
  EXPECT_THROW(run_op_exact("ReduceSum", {m23(), constant(Tensor::from_vector<float>({1}, {1}))}),
               UserError);
}

TEST(ReduceOps, InferenceWithSymbolsAndRuntimeAxes) {
  TensorType t(DType::kFloat32, {Dim::sym("batch"), Dim(3), Dim::sym("h")});
  Graph g;
  Value* x = g.add_value("x", t);
  Node* n = g.add_node("ReduceMean", {x, g.add_constant("a", i64({2}))}, 1, keep(0));
  infer_node(*n);
  EXPECT_EQ(n->outputs[0]->type.str(), "float32[batch, 3]");
  // Axes known only at run time: keepdims keeps the rank, dims unknown.
  Value* ax = g.add_value("ax", TensorType(DType::kInt64, {Dim(1)}));
  Node* k = g.add_node("ReduceSum", {x, ax}, 1, keep(1));
  infer_node(*k);
  EXPECT_EQ(k->outputs[0]->type.rank(), 3);
  EXPECT_FALSE(k->outputs[0]->type.dims[0].known());
  // Without keepdims the rank follows from the axes' length.
  Node* d = g.add_node("ReduceSum", {x, ax}, 1, keep(0));
  infer_node(*d);
  EXPECT_EQ(d->outputs[0]->type.rank(), 2);
}

TEST(ArgOps, IndicesAndLastIndex) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 5, 5, 7, 0, 7});
  Attrs a;
  a.set("axis", int64_t{1});
  Tensor r = run_op_exact("ArgMax", {x}, a)[0];
  ASSERT_EQ(r.dtype(), DType::kInt64);
  EXPECT_EQ(r.shape(), (Shape{2, 1}));
  expect_near(r, {1, 0});
  a.set("select_last_index", int64_t{1});
  expect_near(run_op_exact("ArgMax", {x}, a)[0], {2, 2});
  Attrs b;
  b.set("keepdims", int64_t{0});
  Tensor m = run_op_exact("ArgMin", {x}, b)[0];  // axis 0
  EXPECT_EQ(m.shape(), (Shape{3}));
  expect_near(m, {0, 1, 0});
  EXPECT_THROW(run_op_exact("ArgMax", {Tensor(DType::kFloat32, {0, 2})}), UserError);
}

TEST(ReduceConverters, AxesAttributeBecomesInput) {
  auto m = one_node_model("ReduceMean", 13, {{"x", onnx::TensorProto::FLOAT, {-1, 4, 5}}}, {"x"});
  add_attr(m, "axes", std::vector<int64_t>{-1});
  add_attr(m, "keepdims", int64_t{0});
  auto g = import_model(m);
  const Node* n = g->nodes()[0];
  ASSERT_EQ(n->inputs.size(), 2u);
  ASSERT_TRUE(n->inputs[1]->is_constant());
  EXPECT_EQ(n->inputs[1]->data.to_int64s(), (std::vector<int64_t>{-1}));
  EXPECT_FALSE(n->attrs.has("axes"));
  EXPECT_EQ(g->outputs[0]->type.str(), "float32[n, 4]");

  // ReduceSum took axes as an input from opset 13 already.
  auto s =
      one_node_model("ReduceSum", 13, {{"x", onnx::TensorProto::FLOAT, {2, 3}}}, {"x", "a"}, {});
  auto* init = s.mutable_graph()->add_initializer();
  init->set_name("a");
  init->set_data_type(onnx::TensorProto::INT64);
  init->add_dims(1);
  init->add_int64_data(0);
  EXPECT_EQ(import_model(s)->outputs[0]->type.str(), "float32[1, 3]");
}

TEST(ReduceConverters, MeanBecomesAddsAndDiv) {
  auto m = one_node_model("Mean", 13,
                          {{"a", onnx::TensorProto::FLOAT, {2}},
                           {"b", onnx::TensorProto::FLOAT, {2}},
                           {"c", onnx::TensorProto::FLOAT, {2}}},
                          {"a", "b", "c"});
  auto g = import_model(m);
  std::vector<std::string> ops;
  for (const Node* n : g->nodes()) ops.push_back(n->op);
  EXPECT_EQ(ops, (std::vector<std::string>{"Add", "Add", "Div"}));
  const Node* div = g->nodes().back();
  EXPECT_EQ(div->inputs[1]->data.to_doubles(), (std::vector<double>{3.0}));
}
