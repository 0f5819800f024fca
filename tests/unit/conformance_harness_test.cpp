// The ONNX conformance harness itself: output comparison, test classification, exclusions file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "onnx_conformance/node_test.h"
#include "onnx_conformance/tolerance.h"

using namespace yoloc;
using namespace yoloc::conformance;

TEST(ConformanceCompare, FloatWithinRtolAndAtol) {
  const Tensor e = Tensor::from_vector<float>({3}, {1.0f, 100.0f, 0.0f});
  // 1e-3 relative of 100 is 0.1; atol 1e-7 around 0.
  EXPECT_EQ(compare_tensors(e, Tensor::from_vector<float>({3}, {1.0009f, 100.09f, 5e-8f})), "");
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<float>({3}, {1.0f, 100.2f, 0.0f})), "");
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<float>({3}, {1.0f, 100.0f, 1e-6f})), "");
}

TEST(ConformanceCompare, NanEqualsNanAndInfIsExact) {
  const Tensor e = Tensor::from_vector<float>({2}, {NAN, INFINITY});
  EXPECT_EQ(compare_tensors(e, Tensor::from_vector<float>({2}, {NAN, INFINITY})), "");
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<float>({2}, {0.0f, INFINITY})), "");
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<float>({2}, {NAN, -INFINITY})), "");
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<float>({2}, {NAN, 3e38f})), "");
}

TEST(ConformanceCompare, IntegersAndBoolAreExact) {
  EXPECT_EQ(tolerance_for(DType::kInt64).rtol, 0);
  const Tensor e = Tensor::from_vector<int64_t>({2}, {1, (int64_t{1} << 60) + 1});
  EXPECT_EQ(compare_tensors(e, e.clone()), "");
  // 2^60 and 2^60 + 1 are the same double: the comparison must not go through double.
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<int64_t>({2}, {1, int64_t{1} << 60})), "");
  EXPECT_NE(compare_tensors(Tensor::from_vector<bool>({1}, {true}),
                            Tensor::from_vector<bool>({1}, {false})),
            "");
}

TEST(ConformanceCompare, DtypeAndShapeMustMatch) {
  const Tensor e = Tensor::from_vector<float>({2}, {1, 2});
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<double>({2}, {1, 2})), "");
  EXPECT_NE(compare_tensors(e, Tensor::from_vector<float>({1, 2}, {1, 2})), "");
}

TEST(ConformanceCompare, MessageNamesTheWorstElement) {
  const Tensor e = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  const std::string m = compare_tensors(e, Tensor::from_vector<float>({2, 2}, {1, 2.5f, 3, 9}));
  EXPECT_NE(m.find("2 of 4"), std::string::npos) << m;
  EXPECT_NE(m.find("[1, 1]"), std::string::npos) << m;
}

namespace {

onnx::ModelProto model_with(const std::string& op, int64_t opset, const std::string& domain = "") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(opset);
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  auto* in = m.mutable_graph()->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

}  // namespace

TEST(ConformanceClassify, UnsupportedOpDtypeAndOpset) {
  std::string op;
  EXPECT_EQ(unsupported_reason(model_with("Add", 13), &op), "");
  EXPECT_EQ(unsupported_reason(model_with("NoSuchOp", 13), &op), "unsupported op NoSuchOp");
  EXPECT_EQ(op, "NoSuchOp");
  EXPECT_EQ(unsupported_reason(model_with("Add", 13, "com.example"), &op),
            "unsupported op com.example.Add");
  EXPECT_NE(unsupported_reason(model_with("Add", 99), &op).find("opset 99 out of range"),
            std::string::npos);
  onnx::ModelProto s = model_with("Add", 13);
  s.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::STRING);
  EXPECT_NE(unsupported_reason(s, &op).find("unsupported dtype STRING"), std::string::npos);
  onnx::ModelProto q = model_with("Add", 13);
  q.mutable_graph()->mutable_input(0)->mutable_type()->mutable_sequence_type();
  EXPECT_NE(unsupported_reason(q, &op).find("sequence"), std::string::npos);
}

TEST(ConformanceClassify, MainOpFromTheTestName) {
  onnx::ModelProto m = model_with("ReduceMax", 13);
  m.mutable_graph()->add_node()->set_op_type("Add");
  EXPECT_EQ(main_op(m, "test_reduce_max_default_axes"), "ReduceMax");
  EXPECT_EQ(main_op(m, "test_add_bcast"), "Add");
  EXPECT_EQ(main_op(m, "test_something_else"), "ReduceMax");  // first node
  EXPECT_EQ(main_op(model_with("MatMulInteger", 13), "test_matmulinteger"), "MatMulInteger");
}

TEST(ConformanceExclusions, ReadsNamesAndReasons) {
  const auto p = std::filesystem::temp_directory_path() / "yoloc_exclusions_test.txt";
  std::ofstream(p) << "# comment\n\ntest_a  needs   double rounding  # trailing\ntest_b x\n";
  const ExclusionList l = read_exclusions(p);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l.at("test_a"), "needs   double rounding");
  std::ofstream(p) << "test_c\n";
  EXPECT_THROW(read_exclusions(p), UserError);
  // "[suite] name reason" scopes an entry to one suite.
  std::ofstream(p) << "[debian 1.12] test_d  bad data\n  [x]test_e y\n";
  const ExclusionList scoped = read_exclusions(p);
  ASSERT_EQ(scoped.size(), 2u);
  EXPECT_EQ(scoped.at("[debian 1.12] test_d"), "bad data");
  EXPECT_EQ(scoped.at("[x] test_e"), "y");
  std::ofstream(p) << "[debian test_f x\n";
  EXPECT_THROW(read_exclusions(p), UserError);
  std::ofstream(p) << "[debian]\n";
  EXPECT_THROW(read_exclusions(p), UserError);
  std::filesystem::remove(p);
}
