// Activation ops: values from numpy / torch formulas computed independently, attributes,
// broadcasting, Clip bounds and converters.
#include <cmath>
#include <limits>

#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

Attrs alpha(float a) {
  Attrs at;
  at.set("alpha", a);
  return at;
}

}  // namespace

TEST(ActivationOps, AreElementwise) {
  for (const char* op :
       {"Sigmoid", "Tanh", "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish",
        "Softplus", "Softsign", "Mish", "Gelu", "ThresholdedRelu", "PRelu", "Clip", "SiLU"}) {
    const OpDef* d = OpRegistry::global().find(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_TRUE(d->has(kTraitElementwise)) << op;
  }
}

TEST(ActivationOps, SigmoidFamilyValues) {
  Tensor x = Tensor::from_vector<double>({4}, {-1000, -1, 1, 1000});
  // numpy float64: 1/(1+exp(-x)), x*sigmoid, x*tanh(logaddexp(0,x)), logaddexp(0,x)
  expect_near(run_op_exact("Sigmoid", {x})[0], {0, 0.2689414213699951, 0.7310585786300049, 1},
              1e-12);
  expect_near(run_op_exact("SiLU", {x})[0], {0, -0.2689414213699951, 0.7310585786300049, 1000},
              1e-12);
  expect_near(run_op_exact("Mish", {x})[0], {0, -0.30340146137410895, 0.8650983882673103, 1000},
              1e-12);
  expect_near(run_op_exact("Softplus", {x})[0], {0, 0.31326168751822286, 1.3132616875182228, 1000},
              1e-12);
  expect_near(run_op_exact("Softsign", {x})[0], {-1000.0 / 1001, -0.5, 0.5, 1000.0 / 1001}, 1e-12);
}

TEST(ActivationOps, ReluVariants) {
  Tensor x = Tensor::from_vector<float>({4}, {-2, -0.5f, 0, 3});
  expect_near(run_op_exact("Relu", {x})[0], {0, 0, 0, 3});
  expect_near(run_op_exact("LeakyRelu", {x})[0], {-0.02, -0.005, 0, 3});
  expect_near(run_op_exact("LeakyRelu", {x}, alpha(0.5f))[0], {-1, -0.25, 0, 3});
  expect_near(run_op_exact("Elu", {x})[0], {std::expm1(-2.0), std::expm1(-0.5), 0, 3});
  // numpy: 1.0507 * (x > 0 ? x : 1.67326 * (exp(x) - 1))
  expect_near(run_op_exact("Selu", {x})[0],
              {-1.520166468595695, -0.6917581878028713, 0, 3.1521029620664414}, 1e-6);
  // celu(x, alpha=2) = max(0,x) + min(0, 2 * (exp(x / 2) - 1))
  expect_near(run_op_exact("Celu", {x}, alpha(2))[0],
              {2 * std::expm1(-1.0), 2 * std::expm1(-0.25), 0, 3});
  expect_near(run_op_exact("ThresholdedRelu", {x}, alpha(0))[0], {0, 0, 0, 3});
  expect_near(run_op_exact("HardSigmoid", {x})[0], {0.1, 0.4, 0.5, 1});
  expect_near(run_op_exact("HardSwish", {Tensor::from_vector<float>({4}, {-3, 1, 3, 4})})[0],
              {0, 2.0 / 3.0, 3, 4});
}

TEST(ActivationOps, ReluOnIntegersAndNaN) {
  expect_near(run_op_exact("Relu", {Tensor::from_vector<int8_t>({3}, {-128, 0, 127})})[0],
              {0, 0, 127});
  EXPECT_TRUE(std::isnan(run_op_exact("Relu", {Tensor::scalar<float>(NAN)})[0].data<float>()[0]));
  EXPECT_THROW(run_op_exact("Relu", {Tensor::from_vector<uint8_t>({1}, {1})}), UserError);
}

TEST(ActivationOps, Gelu) {
  Tensor x = Tensor::from_vector<double>({2}, {1.0, -0.5});
  // numpy/math float64: 0.5x(1+erf(x/sqrt2)) and 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))
  expect_near(run_op_exact("Gelu", {x})[0], {0.8413447460685429, -0.15426876936299344}, 1e-12);
  Attrs tanh;
  tanh.set("approximate", std::string("tanh"));
  expect_near(run_op_exact("Gelu", {x}, tanh)[0], {0.8411919906082768, -0.15428599017485606},
              1e-12);
  Attrs bad;
  bad.set("approximate", std::string("erf"));
  EXPECT_THROW(run_op_exact("Gelu", {x}, bad), UserError);
}

TEST(ActivationOps, PReluBroadcastsSlope) {
  Tensor x = Tensor::from_vector<float>({1, 2, 2}, {-1, 2, -3, 4});
  Tensor slope = Tensor::from_vector<float>({2, 1}, {0.5f, 0.25f});
  expect_near(run_op_exact("PRelu", {x, slope})[0], {-0.5, 2, -0.75, 4});
  Tensor xi = Tensor::from_vector<int32_t>({3}, {-2, 5, -7});
  expect_near(run_op_exact("PRelu", {xi, Tensor::scalar<int32_t>(3)})[0], {-6, 5, -21});
  // The output must keep x's shape: a slope that would grow it is an error.
  EXPECT_THROW(run_op_exact("PRelu", {Tensor::from_vector<float>({2}, {1, 2}),
                                      Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}),
               UserError);
  EXPECT_THROW(run_op_exact("PRelu", {x, Tensor::scalar<double>(1)}), UserError);
}

TEST(ActivationOps, ClipBounds) {
  Tensor x = Tensor::from_vector<float>({4}, {-2, -0.5f, 0.5f, 2});
  expect_near(run_op_exact("Clip", {x, Tensor::scalar<float>(-1), Tensor::scalar<float>(1)})[0],
              {-1, -0.5, 0.5, 1});
  expect_near(run_op_exact("Clip", {x, Tensor(), Tensor::scalar<float>(0)})[0], {-2, -0.5, 0, 0});
  expect_near(run_op_exact("Clip", {x, Tensor::scalar<float>(0)})[0], {0, 0, 0.5, 2});
  expect_near(run_op_exact("Clip", {x})[0], {-2, -0.5, 0.5, 2});
  Tensor xi = Tensor::from_vector<int64_t>({3}, {-9, 3, 9});
  expect_near(run_op_exact("Clip", {xi, constant(Tensor::scalar<int64_t>(0)),
                                    constant(Tensor::scalar<int64_t>(6))})[0],
              {0, 3, 6});
  EXPECT_THROW(run_op_exact("Clip", {x, Tensor::scalar<double>(0)}), UserError);
  EXPECT_THROW(run_op_exact("Clip", {x, Tensor::from_vector<float>({2}, {0, 1})}), UserError);
}

TEST(ActivationConverters, Clip6AttributesBecomeInputs) {
  auto m = one_node_model("Clip", 7, {{"x", onnx::TensorProto::FLOAT16, {-1, 3}}}, {"x"});
  add_attr(m, "max", 6.0f);
  auto g = import_model(m);
  ASSERT_EQ(g->num_nodes(), 1u);
  const Node* n = g->nodes()[0];
  EXPECT_EQ(n->op, "Clip");
  ASSERT_EQ(n->inputs.size(), 3u);
  EXPECT_EQ(n->inputs[1], nullptr);
  ASSERT_TRUE(n->inputs[2] && n->inputs[2]->is_constant());
  EXPECT_EQ(n->inputs[2]->data.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(n->inputs[2]->data.data<Half>()[0]), 6.0f);
  EXPECT_EQ(g->outputs[0]->type.str(), "float16[n, 3]");
}

TEST(ActivationConverters, Clip11PassesThrough) {
  auto m = one_node_model(
      "Clip", 11, {{"x", onnx::TensorProto::FLOAT, {2}}, {"lo", onnx::TensorProto::FLOAT, {}}},
      {"x", "lo"});
  auto g = import_model(m);
  EXPECT_EQ(g->nodes()[0]->inputs.size(), 2u);
}
