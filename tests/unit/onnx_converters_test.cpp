// ONNX converters of the newer and older opset forms: the importer's opset range, Swish,
// Dropout, QuantizeLinear-23's precision and DequantizeLinear-23's output_dtype. Each model is
// one node built here, imported and run on the reference executor; expected values are
// hand-computed (numpy for the float16 ones).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "yoloc/half.h"
#include "frontend/onnx/importer.h"
#include "ops/reference_executor.h"

using namespace yoloc;

namespace {

/// A one-node model: graph inputs `ins` (name, ONNX elem type, shape), constant initializers and
/// outputs `outs` (the node's outputs, all graph outputs).
struct OneNode {
  onnx::ModelProto m;
  onnx::NodeProto* node;

  OneNode(const std::string& op, int64_t opset) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    node = m.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name("n");
  }
  void input(const std::string& name, int32_t elem, const std::vector<int64_t>& shape) {
    node->add_input(name);
    auto* vi = m.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* dims = tt->mutable_shape();  // a declared shape: {} is a scalar, not unranked
    for (int64_t d : shape) dims->add_dim()->set_dim_value(d);
  }
  /// A constant input holding `t` (raw little-endian data).
  void constant(const std::string& name, int32_t elem, const Tensor& t) {
    node->add_input(name);
    auto* init = m.mutable_graph()->add_initializer();
    init->set_name(name);
    init->set_data_type(elem);
    for (int64_t d : t.shape()) init->add_dims(d);
    init->set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  }
  void output(const std::string& name) {
    node->add_output(name);
    m.mutable_graph()->add_output()->set_name(name);
  }
  onnx::AttributeProto* attr(const std::string& name, onnx::AttributeProto::AttributeType type) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }
  void attr_int(const std::string& name, int64_t v) {
    attr(name, onnx::AttributeProto::INT)->set_i(v);
  }
  void attr_float(const std::string& name, float v) {
    attr(name, onnx::AttributeProto::FLOAT)->set_f(v);
  }
  std::unique_ptr<Graph> import() const {
    return onnx_frontend::import_onnx_bytes(m.SerializeAsString(), "test model");
  }
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds) const {
    auto g = import();
    std::vector<Tensor> r;
    for (auto& nt : run_reference(*g, feeds)) r.push_back(nt.tensor);
    return r;
  }
};

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kUInt8 = onnx::TensorProto::UINT8;
constexpr int32_t kFloat16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kBool = onnx::TensorProto::BOOL;

std::string import_error(const OneNode& n) {
  try {
    n.import();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OnnxConverters, OpsetRangeIsOneToTwentyEight) {
  OneNode relu28("Relu", 28);
  relu28.input("x", kFloat, {2});
  relu28.output("y");
  const auto y = relu28.run({{"x", Tensor::from_vector<float>({2}, {-1.0f, 3.0f})}});
  EXPECT_EQ(y[0].to_doubles(), (std::vector<double>{0.0, 3.0}));

  OneNode relu29("Relu", 29);
  relu29.input("x", kFloat, {2});
  relu29.output("y");
  EXPECT_NE(import_error(relu29).find("opset 29 is not supported"), std::string::npos);

  // Opset 1 is accepted where a converter covers the op's old form (Softsign-1)...
  OneNode softsign1("Softsign", 1);
  softsign1.input("x", kFloat, {1});
  softsign1.output("y");
  EXPECT_DOUBLE_EQ(softsign1.run({{"x", Tensor::from_vector<float>({1}, {3.0f})}})[0]
                       .to_doubles()[0],
                   0.75);
  // ... and old forms without one (Add-6's legacy broadcast) are rejected by name.
  OneNode add6("Add", 6);
  add6.input("a", kFloat, {1});
  add6.input("b", kFloat, {1});
  add6.output("c");
  EXPECT_NE(import_error(add6).find("supports Add from opset 7"), std::string::npos)
      << import_error(add6);
}

TEST(OnnxConverters, MalformedOutputListsAreUserErrors) {
  // A node without outputs, a Constant included (found by the importer's fuzzer: it read an
  // output that does not exist).
  OneNode constant("Constant", 17);
  auto* value = constant.attr("value_float", onnx::AttributeProto::FLOAT);
  value->set_f(1.0f);
  EXPECT_NE(import_error(constant).find("names no output"), std::string::npos)
      << import_error(constant);
  // More outputs than the op has.
  for (const char* op : {"Identity", "Relu"}) {
    OneNode two(op, 17);
    two.input("x", kFloat, {2});
    two.output("y");
    two.output("z");
    const std::string error = import_error(two);
    EXPECT_NE(error.find("expects 1 to 1 outputs, got 2"), std::string::npos) << op << ": " << error;
  }
}

TEST(OnnxConverters, MalformedSizesAreUserErrors) {
  // Each found by the importer's fuzzer (fuzz/regressions/onnx_import_fuzzer).
  const auto expect_error = [](const OneNode& n, const std::string& part) {
    const std::string error = import_error(n);
    EXPECT_NE(error.find(part), std::string::npos) << "want \"" << part << "\", got: " << error;
  };
  OneNode no_input("Split", 11);  // a required input left empty
  no_input.node->add_input("");
  no_input.output("a");
  expect_error(no_input, "input 0 is required");

  OneNode scalar("Split", 13);  // axis 0 of a rank-0 tensor
  scalar.input("x", kFloat, {});
  scalar.output("a");
  expect_error(scalar, "a scalar has no axis to split");

  OneNode sizes("Split", 13);  // split sizes whose sum overflows int64
  sizes.input("x", kFloat, {4});
  sizes.constant("s", onnx::TensorProto::INT64,
                 Tensor::from_vector<int64_t>({2}, {int64_t{1} << 62, int64_t{1} << 62}));
  sizes.output("a");
  sizes.output("b");
  expect_error(sizes, "overflows a 64-bit size");

  OneNode tile("Tile", 13);  // repeats times the dim overflows int64
  tile.input("x", kFloat, {300});
  tile.constant("r", onnx::TensorProto::INT64, Tensor::from_vector<int64_t>({1}, {int64_t{1} << 60}));
  tile.output("y");
  expect_error(tile, "overflows a 64-bit size");

  OneNode reshape("Reshape", 14);  // a shape whose size overflows int64
  reshape.input("x", kFloat, {12});
  reshape.constant("s", onnx::TensorProto::INT64,
                   Tensor::from_vector<int64_t>({2}, {int64_t{1} << 40, int64_t{1} << 40}));
  reshape.output("y");
  expect_error(reshape, "overflows a 64-bit size");

  OneNode slice("Slice", 13);  // a scalar sliced
  slice.input("x", kFloat, {});
  for (const char* name : {"starts", "ends"})
    slice.constant(name, onnx::TensorProto::INT64, Tensor::from_vector<int64_t>({1}, {0}));
  slice.output("y");
  expect_error(slice, "a scalar has no axis to slice");

  // An initializer declaring 2^34 floats with 4 bytes of data: refused before any allocation.
  OneNode huge("Relu", 13);
  huge.node->add_input("w");
  auto* init = huge.m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(kFloat);
  init->add_dims(int64_t{1} << 34);
  init->set_raw_data(std::string(4, '\0'));
  huge.output("y");
  expect_error(huge, "should hold 17179869184 values but holds 1");
}

TEST(OnnxConverters, SliceStepsOfAnyMagnitude) {
  // Steps near the int64 limits take the first element only (the count once overflowed).
  for (const int64_t step : {INT64_MAX, INT64_MIN}) {
    OneNode slice("Slice", 13);
    slice.input("x", kFloat, {5});
    slice.constant("starts", onnx::TensorProto::INT64,
                   Tensor::from_vector<int64_t>({1}, {step > 0 ? 1 : 3}));
    slice.constant("ends", onnx::TensorProto::INT64,
                   Tensor::from_vector<int64_t>({1}, {step > 0 ? INT64_MAX : INT64_MIN}));
    slice.constant("axes", onnx::TensorProto::INT64, Tensor::from_vector<int64_t>({1}, {0}));
    slice.constant("steps", onnx::TensorProto::INT64, Tensor::from_vector<int64_t>({1}, {step}));
    slice.output("y");
    const auto y = slice.run({{"x", Tensor::from_vector<float>({5}, {0, 1, 2, 3, 4})}});
    EXPECT_EQ(y[0].to_doubles(), (std::vector<double>{step > 0 ? 1.0 : 3.0})) << step;
  }
}

TEST(OnnxConverters, SwishIsSiLUForAlphaOneElseXTimesSigmoidOfAlphaX) {
  OneNode one("Swish", 24);
  one.input("x", kFloat, {1});
  one.output("y");
  EXPECT_EQ(one.import()->nodes().front()->op, "SiLU");

  OneNode half("Swish", 24);
  half.input("x", kFloat, {3});
  half.output("y");
  half.attr_float("alpha", 0.5f);
  const auto y = half.run({{"x", Tensor::from_vector<float>({3}, {-1.0f, 0.0f, 2.0f})}})[0];
  // -1 * sigmoid(-0.5), 0, 2 * sigmoid(1).
  EXPECT_NEAR(y.data<float>()[0], -0.3775406688f, 1e-6);
  EXPECT_EQ(y.data<float>()[1], 0.0f);
  EXPECT_NEAR(y.data<float>()[2], 1.4621171573f, 1e-6);
}

TEST(OnnxConverters, DropoutIsIdentityWithAnAllOnesMask) {
  const Tensor x = Tensor::from_vector<float>({2}, {1.5f, -2.0f});
  OneNode d12("Dropout", 12);
  d12.input("x", kFloat, {2});
  d12.constant("ratio", kFloat, Tensor::scalar<float>(0.3f));
  d12.constant("training_mode", kBool, Tensor::scalar<bool>(false));
  d12.output("y");
  d12.output("mask");
  auto r = d12.run({{"x", x}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].to_doubles(), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(r[1].dtype(), DType::kBool);
  EXPECT_EQ(r[1].to_int64s(), (std::vector<int64_t>{1, 1}));

  // Before opset 10 the mask has the input's type.
  OneNode d7("Dropout", 7);
  d7.input("x", kFloat, {2});
  d7.output("y");
  d7.output("mask");
  r = d7.run({{"x", x}});
  EXPECT_EQ(r[1].dtype(), DType::kFloat32);
  EXPECT_EQ(r[1].to_doubles(), (std::vector<double>{1.0, 1.0}));

  // Training mode with a ratio of 0 keeps everything; with the default ratio it is random.
  OneNode zero("Dropout", 13);
  zero.input("x", kFloat, {2});
  zero.constant("ratio", kFloat, Tensor::scalar<float>(0.0f));
  zero.constant("training_mode", kBool, Tensor::scalar<bool>(true));
  zero.output("y");
  EXPECT_EQ(zero.run({{"x", x}})[0].to_doubles(), (std::vector<double>{1.5, -2.0}));

  OneNode random("Dropout", 13);
  random.input("x", kFloat, {2});
  random.node->add_input("");
  random.constant("training_mode", kBool, Tensor::scalar<bool>(true));
  random.output("y");
  EXPECT_NE(import_error(random).find("training-mode dropout"), std::string::npos);

  OneNode runtime("Dropout", 13);
  runtime.input("x", kFloat, {2});
  runtime.node->add_input("");
  runtime.input("training_mode", kBool, {});
  runtime.output("y");
  EXPECT_NE(import_error(runtime).find("training_mode must be a constant"), std::string::npos);
}

TEST(OnnxConverters, QuantizeLinear23AcceptsFloatPrecisionOnly) {
  auto model = [](int64_t precision) {
    OneNode q("QuantizeLinear", 23);
    q.input("x", kFloat, {2});
    q.constant("scale", kFloat, Tensor::scalar<float>(0.5f));
    q.constant("zp", kUInt8, Tensor::scalar<uint8_t>(10));
    q.output("y");
    q.attr_int("precision", precision);
    return q;
  };
  // 3 / 0.5 + 10 = 16; 1.25 / 0.5 = 2.5 rounds to even 2, + 10 = 12.
  const auto y = model(onnx::TensorProto::FLOAT)
                     .run({{"x", Tensor::from_vector<float>({2}, {3.0f, 1.25f})}})[0];
  EXPECT_EQ(y.to_int64s(), (std::vector<int64_t>{16, 12}));
  EXPECT_NE(import_error(model(kFloat16)).find("precision 10 is not supported"),
            std::string::npos);
}

TEST(OnnxConverters, DequantizeLinear23OutputDtype) {
  const Tensor x = Tensor::from_vector<uint8_t>({2}, {0, 255});
  // float scale, float16 output: 255 * 0.1f = 25.49999... in float32, 25.5 in float16.
  OneNode to_half("DequantizeLinear", 23);
  to_half.input("x", kUInt8, {2});
  to_half.constant("scale", kFloat, Tensor::scalar<float>(0.1f));
  to_half.output("y");
  to_half.attr_int("output_dtype", kFloat16);
  Tensor y = to_half.run({{"x", x}})[0];
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{0.0, 25.5}));

  // float16 scale, float32 output: the product of the exact scale 0.0999755859375, not rounded
  // to float16 (which would give 25.5).
  OneNode to_float("DequantizeLinear", 23);
  to_float.input("x", kUInt8, {2});
  to_float.constant("scale", kFloat16, Tensor::scalar<Half>(Half(0.1f)));
  to_float.output("y");
  to_float.attr_int("output_dtype", kFloat);
  y = to_float.run({{"x", x}})[0];
  ASSERT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 255.0f * 0.0999755859375f);

  OneNode to_int("DequantizeLinear", 23);
  to_int.input("x", kUInt8, {2});
  to_int.constant("scale", kFloat, Tensor::scalar<float>(0.1f));
  to_int.output("y");
  to_int.attr_int("output_dtype", onnx::TensorProto::INT8);
  EXPECT_NE(import_error(to_int).find("output_dtype 3 is not supported"), std::string::npos);

  OneNode blocked("DequantizeLinear", 21);
  blocked.input("x", kUInt8, {2});
  blocked.constant("scale", kFloat, Tensor::from_vector<float>({1}, {0.1f}));
  blocked.output("y");
  blocked.attr_int("block_size", 2);
  EXPECT_NE(import_error(blocked).find("blocked quantisation (block_size 2)"), std::string::npos);
}
