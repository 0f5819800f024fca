// Shape, Size, ConstantOfShape, Range, EyeLike, and the folding / symbolic propagation of shape
// sub-graphs. Expected values are hand-computed.
#include <gtest/gtest.h>

#include "op_test_util.h"

using namespace yoloc;
using yoloc::testing::run_op;

namespace {

std::vector<int64_t> ints(const Tensor& t) { return t.to_int64s(); }

}  // namespace

TEST(ShapeOp, StartEndClampLikeOnnx) {
  const Tensor x(DType::kFloat32, {2, 3, 4, 5});
  EXPECT_EQ(ints(run_op("Shape", {x})[0]), (std::vector<int64_t>{2, 3, 4, 5}));
  Attrs a;
  a.set("start", int64_t{1});
  a.set("end", int64_t{-1});
  EXPECT_EQ(ints(run_op("Shape", {x}, a)[0]), (std::vector<int64_t>{3, 4}));
  Attrs b;
  b.set("start", int64_t{-10});
  b.set("end", int64_t{10});
  EXPECT_EQ(ints(run_op("Shape", {x}, b)[0]), (std::vector<int64_t>{2, 3, 4, 5}));
  Attrs c;
  c.set("start", int64_t{3});
  c.set("end", int64_t{1});
  EXPECT_EQ(run_op("Shape", {x}, c)[0].numel(), 0);
}

TEST(ShapeOp, InfersValueAndSymbolsFromTypes) {
  Graph g;
  Value* x = g.add_value("x", TensorType(DType::kFloat32, {Dim::sym("batch"), 3, 640, Dim()}));
  g.inputs.push_back(x);
  Node* s = g.add_node("Shape", {x}, 1);
  Attrs a;
  a.set("start", int64_t{1});
  a.set("end", int64_t{3});
  Node* s13 = g.add_node("Shape", {x}, 1, a);
  infer_shapes(g);
  // Dims 1..3 are known: a value.
  ASSERT_NE(s13->outputs[0]->known(), nullptr);
  EXPECT_EQ(ints(*s13->outputs[0]->known()), (std::vector<int64_t>{3, 640}));
  // The whole shape is symbolic: [batch, 3, 640, ?].
  EXPECT_EQ(s->outputs[0]->known(), nullptr);
  const auto& sym = s->outputs[0]->symbolic;
  ASSERT_EQ(sym.size(), 4u);
  EXPECT_EQ(sym[0].symbol, "batch");
  EXPECT_EQ(sym[1].value, 3);
  EXPECT_EQ(sym[2].value, 640);
  EXPECT_FALSE(sym[3].value.has_value());
  EXPECT_TRUE(sym[3].symbol.empty());
}

TEST(ShapeOp, SizeAndConstantOfShape) {
  EXPECT_EQ(ints(run_op("Size", {Tensor(DType::kFloat32, {2, 3, 4})})[0]),
            (std::vector<int64_t>{24}));
  Attrs a;
  a.set("value", Tensor::from_vector<int32_t>({1}, {7}));
  const Tensor c = run_op("ConstantOfShape", {Tensor::from_vector<int64_t>({2}, {2, 3})}, a)[0];
  EXPECT_EQ(c.dtype(), DType::kInt32);
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(ints(c), std::vector<int64_t>(6, 7));
  // Default value: float32 zeros; an empty shape gives a scalar.
  const Tensor z = run_op("ConstantOfShape", {Tensor(DType::kInt64, {0})})[0];
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_EQ(z.rank(), 0);
  EXPECT_THROW(run_op("ConstantOfShape", {Tensor::from_vector<int64_t>({1}, {-2})}), UserError);
}

TEST(ShapeOp, RangeCountsAndAccumulates) {
  auto range = [](auto s, auto l, auto d) {
    using T = decltype(s);
    return run_op("Range", {Tensor::scalar<T>(s), Tensor::scalar<T>(l), Tensor::scalar<T>(d)})[0];
  };
  EXPECT_EQ(ints(range(int32_t{10}, int32_t{4}, int32_t{-3})), (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(range(int64_t{0}, int64_t{-5}, int64_t{1}).numel(), 0);
  const Tensor f = range(0.5f, 2.0f, 0.5f);
  ASSERT_EQ(f.numel(), 3);
  EXPECT_FLOAT_EQ(f.data<float>()[2], 1.5f);
  EXPECT_THROW(range(int64_t{0}, int64_t{5}, int64_t{0}), UserError);
}

TEST(ShapeOp, RangeOfHalfComputesInTheStashType) {
  // Range-27: float16 start + i * delta in float32 (stash_type 1), rounded once. Accumulating in
  // float16 would end at 1.99609375 instead of 2 (numpy).
  const std::vector<yoloc::testing::OpInput> in{Tensor::scalar<Half>(Half(0.0f)), Tensor::scalar<Half>(Half(2.0f)),
                                Tensor::scalar<Half>(Half(0.1f))};
  for (int64_t stash : {int64_t{1}, int64_t{11}}) {
    Attrs a;
    a.set("stash_type", stash);
    const Tensor r = run_op("Range", in, a)[0];
    ASSERT_EQ(r.numel(), 21);
    EXPECT_EQ(r.dtype(), DType::kFloat16);
    EXPECT_DOUBLE_EQ(r.to_doubles()[6], 0.599609375);
    EXPECT_DOUBLE_EQ(r.to_doubles()[20], 2.0);
  }
  Attrs half_stash;
  half_stash.set("stash_type", int64_t{10});
  EXPECT_THROW(run_op("Range", in, half_stash), UserError);
}

TEST(ShapeOp, EyeLikeOffDiagonal) {
  Attrs a;
  a.set("k", int64_t{-1});
  a.set("dtype", std::string("int64"));
  const Tensor e = run_op("EyeLike", {Tensor(DType::kFloat32, {3, 2})}, a)[0];
  EXPECT_EQ(e.dtype(), DType::kInt64);
  EXPECT_EQ(ints(e), (std::vector<int64_t>{0, 0, 1, 0, 0, 1}));
  Attrs huge;
  huge.set("k", int64_t{INT64_MAX});
  EXPECT_EQ(ints(run_op("EyeLike", {Tensor(DType::kInt32, {2, 2})}, huge)[0]),
            (std::vector<int64_t>{0, 0, 0, 0}));
}

// The YOLOv8 head pattern: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [144], [-1])).
TEST(ShapeOp, SymbolicBatchFlowsThroughShapeSubgraph) {
  auto build = [](std::vector<Dim> in_dims) {
    auto g = std::make_unique<Graph>();
    Value* x = g->add_value("x", TensorType(DType::kFloat32, std::move(in_dims)));
    g->inputs.push_back(x);
    Value* shape = g->add_node("Shape", {x}, 1)->outputs[0];
    Value* zero = g->add_constant("zero", Tensor::scalar<int64_t>(0));
    Value* b = g->add_node("Gather", {shape, zero}, 1)->outputs[0];
    Value* axes = g->add_constant("axes", Tensor::from_vector<int64_t>({1}, {0}));
    Value* b1 = g->add_node("Unsqueeze", {b, axes}, 1)->outputs[0];
    Value* c144 = g->add_constant("c144", Tensor::from_vector<int64_t>({1}, {144}));
    Value* m1 = g->add_constant("m1", Tensor::from_vector<int64_t>({1}, {-1}));
    Attrs a;
    a.set("axis", int64_t{0});
    Value* target = g->add_node("Concat", {b1, c144, m1}, 1, a)->outputs[0];
    Value* y = g->add_node("Reshape", {x, target}, 1)->outputs[0];
    g->outputs.push_back(y);
    infer_shapes(*g);
    return g;
  };
  auto out_type = [](const Graph& g) { return g.outputs[0]->type; };
  // Fully static: every shape value folds.
  auto g1 = build({2, 144, 8, 8});
  EXPECT_EQ(out_type(*g1), TensorType(DType::kFloat32, {2, 144, 64}));
  // Symbolic batch, static spatial dims: batch cancels out, so -1 is still inferred.
  auto g2 = build({Dim::sym("batch"), 144, 8, 8});
  EXPECT_EQ(out_type(*g2), TensorType(DType::kFloat32, {Dim::sym("batch"), 144, 64}));
  // Unknown spatial dims: rank and batch survive.
  auto g3 = build({Dim::sym("batch"), 144, Dim::sym("h"), Dim::sym("w")});
  EXPECT_EQ(out_type(*g3), TensorType(DType::kFloat32, {Dim::sym("batch"), 144, Dim()}));
  // And it runs.
  Tensor x(DType::kFloat32, {3, 144, 2, 5});
  auto outs = run_reference(*g3, {{"x", x}});
  EXPECT_EQ(outs[0].tensor.shape(), (Shape{3, 144, 10}));
}
