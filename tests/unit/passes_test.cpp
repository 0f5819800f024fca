// Each pass on small graphs: the expected structure after it, the cases where it must not fire,
// and the same outputs as before it (reference executor).
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/verifier.h"
#include "passes/algebraic_simplify.h"
#include "passes/bn_folding.h"
#include "passes/canonicalize.h"
#include "passes/combine_parallel_conv.h"
#include "passes/constant_folding.h"
#include "passes/cse.h"
#include "passes/float_compute.h"
#include "passes/fusion.h"
#include "passes/layout_selection.h"
#include "passes/pipeline.h"
#include "passes/quantization.h"
#include "passes/space_to_depth_conv.h"
#include "passes/views.h"
#include "targets/cpu/cpu_attributes.h"
#include "targets/cuda/cuda_attributes.h"
#include "targets/target.h"

using namespace yoloc;
using namespace yoloc::testing;

// An intermediate value that is also a graph output (compile --outputs) stays with its own
// kernel: a tail that ran after the conv reading it would leave the conv without its input.
TEST(Fusion, AnOutputReadByALaterKernelStaysOutOfTheTail) {
  Graph g;
  Value* x = input(g, "x", {1, 4, 8, 8});
  Value* s = node(g, "Sigmoid", {x});
  Value* c = conv(g, s, 4, 4, 3, 1);
  Value* r = node(g, "Relu", {c});
  Value* t = node(g, "Transpose", {r});
  g.outputs.push_back(s);
  g.outputs.push_back(t);
  PassContext ctx;
  Fusion().run(g, ctx);
  // In run order, every kernel reads only values made by kernels before it.
  std::set<const Value*> made(g.inputs.begin(), g.inputs.end());
  for (const FusedGroup* grp : g.kernel_groups_in_run_order()) {
    for (const Node* n : g.nodes()) {
      if (n->group != grp->id) continue;
      for (const Value* in : n->inputs) {
        const bool inside = in && in->producer && in->producer->group == grp->id;
        if (in && !in->is_constant() && !inside) {
          EXPECT_TRUE(made.count(in)) << n->label() << " reads " << in->name << " too early";
        }
      }
    }
    for (const Node* n : g.nodes())
      if (n->group == grp->id) made.insert(n->outputs.begin(), n->outputs.end());
  }
  EXPECT_NE(s->producer->group, t->producer->group);
}

namespace {

template <typename P>
bool apply(Graph& g) {
  PassContext ctx;
  P pass;
  const bool changed = pass.run(g, ctx);
  verify(g);
  return changed;
}

Tensor scalar(float v) { return Tensor::scalar<float>(v); }

}  // namespace

TEST(ConstantFolding, FoldsConstantSubgraphs) {
  Graph g;
  Value* x = input(g, "x", {1, 4});
  Value* c = node(g, "Add", {g.add_constant("a", scalar(1)), g.add_constant("b", scalar(2))});
  g.outputs.push_back(node(g, "Mul", {x, c}));
  EXPECT_TRUE(apply<ConstantFolding>(g));
  EXPECT_EQ(count_op(g, "Add"), 0u);
  ASSERT_EQ(count_op(g, "Mul"), 1u);
  EXPECT_EQ(g.nodes()[0]->input(1)->data.data<float>()[0], 3.0f);
}

TEST(ConstantFolding, LeavesRuntimeValuesAlone) {
  Graph g;
  Value* x = input(g, "x", {1, 4});
  g.outputs.push_back(node(g, "Add", {x, g.add_constant("b", scalar(2))}));
  EXPECT_FALSE(apply<ConstantFolding>(g));
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST(AlgebraicSimplify, RemovesIdentitiesAndTurnsDivIntoMul) {
  Graph g;
  Value* x = input(g, "x", {1, 4});
  Value* a = node(g, "Mul", {x, g.add_constant("one", scalar(1))});
  Value* b = node(g, "Add", {a, g.add_constant("zero", scalar(0))});
  Value* c = node(g, "Div", {b, g.add_constant("four", scalar(4))});
  g.outputs.push_back(c);
  auto before = g.clone();
  EXPECT_TRUE(apply<AlgebraicSimplify>(g));
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.nodes()[0]->op, "Mul");
  EXPECT_EQ(g.nodes()[0]->input(0), g.inputs[0]);
  EXPECT_EQ(g.nodes()[0]->input(1)->data.data<float>()[0], 0.25f);
  EXPECT_LE(max_rel_diff(*before, g, {{"x", random_tensor({1, 4}, 1)}}), 1e-6);
}

TEST(AlgebraicSimplify, KeepsBroadcastingIdentities) {
  Graph g;
  Value* x = input(g, "x", {1, 4});
  // x * ones[3, 4] broadcasts x to [3, 4]: not an identity.
  g.outputs.push_back(node(g, "Mul", {x, g.add_constant("ones", Tensor::from_vector<float>(
                                                                     {3, 1}, {1, 1, 1}))}));
  EXPECT_FALSE(apply<AlgebraicSimplify>(g));
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST(Cse, MergesIdenticalNodes) {
  Graph g;
  Value* x = input(g, "x", {1, 4});
  Value* s1 = node(g, "Sigmoid", {x});
  Value* s2 = node(g, "Sigmoid", {x});
  g.outputs.push_back(node(g, "Add", {s1, s2}));
  EXPECT_TRUE(apply<CommonSubexpressionElimination>(g));
  EXPECT_EQ(count_op(g, "Sigmoid"), 1u);
}

TEST(BnFolding, FoldsBatchNormIntoConv) {
  Graph g;
  Value* x = input(g, "x", {1, 3, 8, 8});
  Value* y = conv(g, x, 3, 4, 3, 7);
  Attrs a;
  a.set("epsilon", 1e-3f);
  Value* bn = node(g, "BatchNormalization",
                   {y, g.add_constant("gamma", random_tensor({4}, 2, 0.5f, 2.0f)),
                    g.add_constant("beta", random_tensor({4}, 3)),
                    g.add_constant("mean", random_tensor({4}, 4)),
                    g.add_constant("var", random_tensor({4}, 5, 0.1f, 1.0f))},
                   a);
  g.outputs.push_back(node(g, "Relu", {bn}));
  auto before = g.clone();
  EXPECT_TRUE(apply<BatchNormFolding>(g));
  EXPECT_EQ(count_op(g, "BatchNormalization"), 0u);
  EXPECT_EQ(count_op(g, "Conv"), 1u);
  EXPECT_LE(max_rel_diff(*before, g, {{"x", random_tensor({1, 3, 8, 8}, 9)}}), 1e-5);
}

TEST(BnFolding, DoesNotFoldAfterNonConvOrSharedConv) {
  Graph g;
  Value* x = input(g, "x", {1, 4, 8, 8});
  Value* r = node(g, "Relu", {x});
  auto bn_of = [&](Value* v) {
    return node(g, "BatchNormalization",
                {v, g.add_constant("g", random_tensor({4}, 2, 0.5f, 2.0f)),
                 g.add_constant("b", random_tensor({4}, 3)), g.add_constant("m", random_tensor({4}, 4)),
                 g.add_constant("v", random_tensor({4}, 5, 0.1f, 1.0f))});
  };
  Value* y = conv(g, x, 4, 4, 1, 3);
  g.outputs.push_back(bn_of(r));
  g.outputs.push_back(bn_of(y));
  g.outputs.push_back(node(g, "Sigmoid", {y}));  // the conv output has a second user
  EXPECT_FALSE(apply<BatchNormFolding>(g));
  EXPECT_EQ(count_op(g, "BatchNormalization"), 2u);
}

TEST(Canonicalize, TurnsSigmoidMulIntoSiLU) {
  Graph g;
  Value* x = input(g, "x", {1, 4});
  Value* y = input(g, "y", {1, 4});
  g.outputs.push_back(node(g, "Mul", {node(g, "Sigmoid", {x}), x}));  // commuted order
  g.outputs.push_back(node(g, "Mul", {x, node(g, "Sigmoid", {y})}));  // not x*sigmoid(x)
  auto before = g.clone();
  EXPECT_TRUE(apply<Canonicalize>(g));
  EXPECT_EQ(count_op(g, "SiLU"), 1u);
  EXPECT_EQ(count_op(g, "Sigmoid"), 1u);
  EXPECT_LE(max_rel_diff(*before, g, {{"x", random_tensor({1, 4}, 1)}, {"y", random_tensor({1, 4}, 2)}}),
            1e-6);
}

TEST(CombineParallelConv, CombinesSameGeometryConvs) {
  Graph g;
  Value* x = input(g, "x", {1, 3, 8, 8});
  g.outputs.push_back(node(g, "Relu", {conv(g, x, 3, 4, 3, 1)}));
  g.outputs.push_back(node(g, "Sigmoid", {conv(g, x, 3, 5, 3, 2)}));
  g.outputs.push_back(conv(g, x, 3, 2, 1, 3));  // other kernel size: stays alone
  auto before = g.clone();
  EXPECT_TRUE(apply<CombineParallelConv>(g));
  EXPECT_EQ(count_op(g, "Conv"), 2u);
  EXPECT_EQ(count_op(g, "Split"), 1u);
  EXPECT_LE(max_rel_diff(*before, g, {{"x", random_tensor({1, 3, 8, 8}, 4)}}), 1e-6);
}

TEST(Views, ConcatOfKernelOutputsIsAView) {
  Graph g;
  Value* x = input(g, "x", {1, 3, 8, 8});
  Attrs axis1;
  axis1.set("axis", int64_t{1});
  Value* cat = node(g, "Concat", {conv(g, x, 3, 4, 3, 1), conv(g, x, 3, 4, 1, 2)}, axis1);
  g.outputs.push_back(node(g, "Relu", {cat}));
  // A concat with a graph input cannot be a view: nothing of ours writes the input.
  Value* cat2 = node(g, "Concat", {x, node(g, "Relu", {x})}, axis1);
  g.outputs.push_back(node(g, "Sigmoid", {cat2}));
  EXPECT_TRUE(apply<Views>(g));
  for (const Node* n : g.nodes()) {
    if (n->op == "Concat") {
      EXPECT_EQ(n->attrs.get_int("view", 0), n->outputs[0] == cat ? 1 : 0) << n->label();
    }
  }
}

// A value a reshape view reads stays a dense tensor of its own: in a concat buffer it would be a
// strided slice (batch 2), which the reshape would address as dense.
TEST(Views, ConcatDoesNotTakeAValueAReshapeViewReads) {
  Graph g;
  Value* x = input(g, "x", {2, 4, 8, 8});
  Attrs axis1;
  axis1.set("axis", int64_t{1});
  Value* a = conv(g, x, 4, 4, 3, 1);
  Value* cat = node(g, "Concat", {a, conv(g, x, 4, 4, 1, 2)}, axis1);
  g.outputs.push_back(node(g, "Relu", {cat}));
  Value* r = node(g, "Reshape", {a, g.add_constant("shape", Tensor::from_vector<int64_t>(
                                                                 {3}, {2, 4, 64}))});
  g.outputs.push_back(node(g, "Sigmoid", {r}));
  EXPECT_TRUE(apply<Views>(g));
  EXPECT_TRUE(r->producer->is_view());
  EXPECT_FALSE(cat->producer->is_view());
}

TEST(Fusion, ConvEpilogueAndSppfAreOneKernelEach) {
  Graph g;
  Value* x = input(g, "x", {1, 4, 8, 8});
  Value* c = conv(g, x, 4, 4, 3, 1);
  Value* s = node(g, "SiLU", {c});
  Value* r = node(g, "Add", {s, x});  // residual add joins the epilogue
  Attrs pool;
  pool.set("kernel_shape", std::vector<int64_t>{5, 5});
  pool.set("pads", std::vector<int64_t>{2, 2, 2, 2});
  pool.set("strides", std::vector<int64_t>{1, 1});
  Value* p1 = node(g, "MaxPool", {r}, pool);
  Value* p2 = node(g, "MaxPool", {p1}, pool);
  Value* p3 = node(g, "MaxPool", {p2}, pool);
  Attrs axis1;
  axis1.set("axis", int64_t{1});
  Value* cat = node(g, "Concat", {r, p1, p2, p3}, axis1);
  g.outputs.push_back(conv(g, cat, 16, 4, 1, 2));
  PassContext ctx;
  Views().run(g, ctx);
  Fusion().run(g, ctx);
  EXPECT_EQ(kernel_count(g), 3u);  // conv+silu+add, sppf, conv
  EXPECT_EQ(g.nodes()[0]->group, g.nodes()[2]->group);
}

namespace {

/// x -> DynamicQuantizeLinear -> ConvInteger(w_q, zero points) -> Cast -> Mul(x_scale * w_scale),
/// the chain ONNX Runtime's quantize_dynamic writes, with uint8 weights w_q and zero point 3.
struct QuantizedConv {
  Graph g;
  Tensor wq;
  float w_scale = 0.02f;
};

void build_quantized_conv(QuantizedConv& q) {
  Graph& g = q.g;
  Value* x = input(g, "x", {1, 3, 6, 6});
  Node* dql = g.add_node("DynamicQuantizeLinear", {x}, 3);
  infer_node(*dql);
  std::vector<uint8_t> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>((i * 37) % 251);
  q.wq = Tensor::from_vector<uint8_t>({4, 3, 3, 3}, w);
  Value* wq = g.add_constant("wq", q.wq);
  Value* wzp = g.add_constant("wzp", Tensor::scalar<uint8_t>(3));
  Value* conv = node(g, "ConvInteger", {dql->outputs[0], wq, dql->outputs[2], wzp}, conv_attrs(3, 1));
  Attrs to_float;
  to_float.set("to", std::string("float32"));
  Value* f = node(g, "Cast", {conv}, to_float);
  Value* scale = node(g, "Mul", {dql->outputs[1], g.add_constant("ws", Tensor::scalar<float>(q.w_scale))});
  g.outputs.push_back(node(g, "Mul", {f, scale}));
}

}  // namespace

TEST(Quantization, KeepsIntegerConvAtAutoPrecision) {
  QuantizedConv q;
  build_quantized_conv(q);
  PassContext ctx;  // precision auto: the model's own numerics
  EXPECT_FALSE(Quantization().run(q.g, ctx));
  EXPECT_EQ(count_op(q.g, "ConvInteger"), 1u);
}

TEST(Quantization, RewritesToFloatConvWithDequantizedWeightsAtFp32) {
  QuantizedConv q;
  build_quantized_conv(q);
  PassContext ctx;
  ctx.precision = Precision::kFp32;
  EXPECT_TRUE(Quantization().run(q.g, ctx));
  verify(q.g);
  EXPECT_EQ(count_op(q.g, "ConvInteger"), 0u);
  EXPECT_EQ(count_op(q.g, "DynamicQuantizeLinear"), 0u);
  ASSERT_EQ(count_op(q.g, "Conv"), 1u);
  // Expected: a float conv of x with (w_q - 3) * 0.02, built independently.
  Graph expect;
  Value* x = input(expect, "x", {1, 3, 6, 6});
  std::vector<float> w;
  for (uint8_t v : q.wq.to_int64s()) w.push_back((static_cast<float>(v) - 3.0f) * q.w_scale);
  Value* wf = expect.add_constant("w", Tensor::from_vector<float>({4, 3, 3, 3}, w));
  expect.outputs.push_back(node(expect, "Conv", {x, wf}, conv_attrs(3, 1)));
  EXPECT_LE(max_rel_diff(expect, q.g, {{"x", random_tensor({1, 3, 6, 6}, 3)}}), 1e-6);
}

TEST(LayoutSelection, BlockedInsideConvRegionsNchwAtTheEdges) {
  Graph g;
  Value* x = input(g, "x", {1, 3, 8, 8});           // the image: 3 channels, cannot be blocked
  Value* a = node(g, "SiLU", {conv(g, x, 3, 16, 3, 1)});
  Value* b = node(g, "Add", {conv(g, a, 16, 16, 1, 2), a});
  Value* odd = conv(g, b, 16, 5, 1, 3);               // 5 channels: not a multiple of 16
  Attrs flat;
  Value* r = node(g, "Flatten", {b}, flat);           // reads NCHW
  g.outputs.push_back(odd);
  g.outputs.push_back(r);
  PassContext ctx;
  ctx.target = yoloc::targets::cpu_attributes();
  EXPECT_TRUE(LayoutSelection().run(g, ctx));
  EXPECT_EQ(a->layout.str(), "NCHW16c");
  EXPECT_EQ(b->layout.str(), "NCHW16c");
  EXPECT_EQ(odd->layout.str(), "NCHW");
  EXPECT_EQ(x->layout.str(), "NCHW");
  // The image into the first conv, b into the 5-channel conv and into Flatten.
  EXPECT_EQ(count_layout_conversions(g), 3u);
  PassContext reference;  // the reference executor keeps everything NCHW
  Graph g2;
  Value* y = input(g2, "y", {1, 16, 4, 4});
  g2.outputs.push_back(conv(g2, y, 16, 16, 1, 4));
  EXPECT_FALSE(LayoutSelection().run(g2, reference));
  EXPECT_EQ(count_layout_conversions(g2), 0u);
}

namespace {

Value* int_list(Graph& g, std::vector<int64_t> v) {
  return g.add_constant("ints", Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

Attrs int_attr(const char* name, int64_t v) {
  Attrs a;
  a.set(name, v);
  return a;
}

// A one-level YOLOv8-like detect head on an 8x8 map: a backbone conv, a box branch (3x3 conv,
// 1x1 conv to 16 = 4 sides x 4 bins; Reshape, Transpose, Softmax over the bins, the 1x1 DFL conv)
// and a class branch (3x3 conv, 1x1 conv to 6, Sigmoid), concatenated into [1, 10, 64]: the
// anchors innermost.
struct V8Head {
  Graph g;
  Value *feature = nullptr, *box = nullptr, *cls = nullptr, *cls_sigmoid = nullptr;
};

void build_v8_head(V8Head& h) {
  Graph& g = h.g;
  Value* x = input(g, "x", {1, 8, 8, 8});
  h.feature = node(g, "SiLU", {conv(g, x, 8, 16, 3, 1)});
  h.box = conv(g, node(g, "SiLU", {conv(g, h.feature, 16, 16, 3, 11)}), 16, 16, 1, 3);
  Value* bins = node(g, "Reshape", {h.box, int_list(g, {1, 4, 4, 64})});
  Attrs perm;
  perm.set("perm", std::vector<int64_t>{0, 2, 1, 3});
  Value* soft = node(g, "Softmax", {node(g, "Transpose", {bins}, perm)}, int_attr("axis", 1));
  Value* sides = node(g, "Reshape", {conv(g, soft, 4, 1, 1, 5), int_list(g, {1, 4, 64})});
  h.cls = conv(g, node(g, "SiLU", {conv(g, h.feature, 16, 16, 3, 13)}), 16, 6, 1, 7);
  h.cls_sigmoid = node(g, "Sigmoid", {h.cls});
  Value* scores = node(g, "Reshape", {h.cls_sigmoid, int_list(g, {1, 6, 64})});
  g.outputs.push_back(node(g, "Concat", {sides, scores}, int_attr("axis", 1)));
}

}  // namespace

// On CUDA the head's last convs (and the Sigmoid between a conv and the tail) store NCHW: the
// tail walks the anchors, which NCHW lays out consecutively. The backbone stays NHWC (convs read
// it). Other targets keep their layouts.
TEST(LayoutSelection, CudaHeadConvsStoreNchwForATailWalkingAnchors) {
  V8Head h;
  build_v8_head(h);
  PassContext cuda;
  cuda.target = yoloc::targets::cuda_attributes();
  EXPECT_TRUE(LayoutSelection().run(h.g, cuda));
  EXPECT_EQ(h.feature->layout.str(), "NHWC");
  EXPECT_EQ(h.box->layout.str(), "NCHW");
  EXPECT_EQ(h.cls->layout.str(), "NCHW");
  EXPECT_EQ(h.cls_sigmoid->layout.str(), "NCHW");
  EXPECT_FALSE(LayoutSelection().run(h.g, cuda));  // the same choice again

  V8Head c;
  build_v8_head(c);
  PassContext cpu;
  cpu.target = yoloc::targets::cpu_attributes();
  EXPECT_TRUE(LayoutSelection().run(c.g, cpu));
  EXPECT_EQ(c.feature->layout.str(), "NCHW16c");
  EXPECT_EQ(c.box->layout.str(), "NCHW16c");
  EXPECT_EQ(c.cls->layout.str(), "NCHW");  // 6 channels: not blocked

  V8Head r;
  build_v8_head(r);
  PassContext reference;
  EXPECT_FALSE(LayoutSelection().run(r.g, reference));
  EXPECT_EQ(r.box->layout.str(), "NCHW");
}

// YOLOv5's tail: Reshape to [1, 3, 40, 8, 8], Transpose to [1, 3, 8, 8, 40] and on to
// [1, 192, 40], the channels innermost: NHWC reads those consecutively, so the conv keeps it.
TEST(LayoutSelection, CudaHeadConvKeepsNhwcForATailWalkingChannels) {
  Graph g;
  Value* x = input(g, "x", {1, 8, 8, 8});
  Value* feature = node(g, "SiLU", {conv(g, x, 8, 16, 3, 1)});
  Value* head = conv(g, feature, 16, 120, 1, 3);
  Attrs perm;
  perm.set("perm", std::vector<int64_t>{0, 1, 3, 4, 2});
  Value* t = node(g, "Transpose", {node(g, "Reshape", {head, int_list(g, {1, 3, 40, 8, 8})})},
                  perm);
  g.outputs.push_back(node(g, "Reshape", {node(g, "Sigmoid", {t}), int_list(g, {1, 192, 40})}));
  PassContext cuda;
  cuda.target = yoloc::targets::cuda_attributes();
  LayoutSelection().run(g, cuda);
  EXPECT_EQ(head->layout.str(), "NHWC");
  EXPECT_EQ(feature->layout.str(), "NHWC");
}

// A conv output that another conv reads stays NHWC, whatever its other readers walk.
TEST(LayoutSelection, CudaConvOutputReadByAConvStaysNhwc) {
  Graph g;
  Value* x = input(g, "x", {1, 8, 8, 8});
  Value* a = conv(g, x, 8, 16, 1, 1);
  g.outputs.push_back(node(g, "Reshape", {a, int_list(g, {1, 16, 64})}));
  g.outputs.push_back(conv(g, a, 16, 8, 3, 3));
  PassContext cuda;
  cuda.target = yoloc::targets::cuda_attributes();
  LayoutSelection().run(g, cuda);
  EXPECT_EQ(a->layout.str(), "NHWC");
}

// At fp16 on CUDA the NCHW head outputs are stored float16 as the NHWC activations are, and so
// are the reshape views the tail reads them through (one buffer, one type); the output stays
// float32.
TEST(StoragePrecision, CudaFp16NarrowsNchwHeadOutputsAndTheirViews) {
  V8Head h;
  build_v8_head(h);
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = Precision::kFp16;
  optimize(h.g, ctx);
  int head_convs = 0, views = 0;
  for (const Node* n : h.g.nodes()) {
    const Value* y = n->outputs[0];
    if (n->op == "Conv" && y->layout.layout == Layout::kNCHW &&
        n->input(0)->layout.layout == Layout::kNHWC) {
      ++head_convs;
      EXPECT_EQ(y->type.dtype, DType::kFloat16) << y->name;
    }
    if (n->op == "Reshape" && n->is_view() && n->input(0)->layout.layout == Layout::kNCHW) {
      ++views;
      EXPECT_EQ(y->type.dtype, DType::kFloat16) << y->name;
    }
  }
  EXPECT_EQ(head_convs, 2);
  EXPECT_EQ(views, 2);  // of the box conv, of the class Sigmoid
  EXPECT_EQ(h.g.outputs[0]->type.dtype, DType::kFloat32);
}

// A conv whose output a reshape view hands out as the graph output: the buffer is the output's,
// float32, and the conv writes float32 into it.
TEST(StoragePrecision, CudaBufferOfAGraphOutputStaysFloat32) {
  Graph g;
  Value* x = input(g, "x", {1, 8, 8, 8});
  Value* feature = node(g, "SiLU", {conv(g, x, 8, 16, 3, 1)});
  Value* head = conv(g, feature, 16, 16, 1, 3);
  g.outputs.push_back(node(g, "Reshape", {head, int_list(g, {1, 16, 64})}));
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = Precision::kFp16;
  optimize(g, ctx);
  const Node* reshape = g.outputs[0]->producer;
  ASSERT_TRUE(reshape->is_view());
  EXPECT_EQ(reshape->input(0)->layout.str(), "NCHW");
  EXPECT_EQ(reshape->input(0)->type.dtype, DType::kFloat32);
  EXPECT_EQ(g.outputs[0]->type.dtype, DType::kFloat32);
  EXPECT_EQ(reshape->input(0)->producer->input(0)->type.dtype, DType::kFloat16);  // the feature
}

// narrow_io (compile --io-precision fp16): the image input, the output and the values whose
// views assemble the output are float16; the rest is stored as without it.
TEST(StoragePrecision, CudaNarrowIoStoresInputsOutputsAndTheirBuffersNarrow) {
  const auto build = [](Graph& g) {
    Value* x = input(g, "x", {1, 8, 8, 8});
    Value* feature = node(g, "SiLU", {conv(g, x, 8, 16, 3, 1)});
    Value* box = conv(g, feature, 16, 4, 1, 1);
    Value* cls = node(g, "Sigmoid", {conv(g, feature, 16, 3, 1, 1)});
    Attrs axis;
    axis.set("axis", int64_t{1});
    g.outputs.push_back(node(g, "Concat", {box, cls}, axis));
  };
  // The types of the input, the output and the output's two parts after optimize().
  const auto io_dtypes = [&](const char* target, Precision precision, bool narrow_io) {
    Graph g;
    build(g);
    PassContext ctx;
    ctx.target = yoloc::targets::attributes(target);
    ctx.precision = precision;
    ctx.narrow_io = narrow_io;
    optimize(g, ctx);
    std::vector<DType> out = {g.inputs[0]->type.dtype, g.outputs[0]->type.dtype};
    const Node* concat = g.outputs[0]->producer;
    EXPECT_TRUE(concat->is_view());
    for (const Value* in : concat->inputs) out.push_back(in->type.dtype);
    return out;
  };
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  EXPECT_EQ(io_dtypes("cuda", Precision::kFp16, true), (std::vector<DType>{f16, f16, f16, f16}));
  EXPECT_EQ(io_dtypes("cuda", Precision::kFp16, false), (std::vector<DType>{f32, f32, f32, f32}));
  // Other targets and fp32 ignore it.
  EXPECT_EQ(io_dtypes("cpu", Precision::kFp32, true), (std::vector<DType>{f32, f32, f32, f32}));
}

namespace {

// y = Cast<float16>(x * 0.5h) + 0.25h on a float16 input x[1, 4]: a float16 model with a
// Cast to float16 inside.
struct HalfGraph {
  Graph g;
  Value* x = nullptr;
  Value* y = nullptr;
};

void build_half_graph(HalfGraph& h) {
  Graph& g = h.g;
  h.x = g.add_value("x", TensorType(DType::kFloat16, {1, 4}));
  g.inputs.push_back(h.x);
  Value* half_c = g.add_constant("half", Tensor::scalar<float>(0.5f).cast(DType::kFloat16));
  Value* quarter = g.add_constant("quarter", Tensor::scalar<float>(0.25f).cast(DType::kFloat16));
  Attrs to16;
  to16.set("to", std::string("float16"));
  Value* m = node(g, "Cast", {node(g, "Mul", {h.x, half_c})}, to16);
  h.y = node(g, "Add", {m, quarter});
  g.outputs.push_back(h.y);
}

}  // namespace

TEST(FloatCompute, ComputesAFloat16GraphInFloat32WithCastsAtTheEdges) {
  HalfGraph h;
  build_half_graph(h);
  PassContext ctx;
  ctx.precision = Precision::kFp32;
  ctx.target = yoloc::targets::cpu_attributes();
  EXPECT_TRUE(FloatCompute().run(h.g, ctx));
  verify(h.g);
  // The edges keep their float16 type.
  ASSERT_EQ(h.g.inputs.size(), 1u);
  ASSERT_EQ(h.g.outputs.size(), 1u);
  EXPECT_EQ(h.g.inputs[0], h.x);
  EXPECT_EQ(h.g.outputs[0], h.y);
  EXPECT_EQ(h.x->type.dtype, DType::kFloat16);
  EXPECT_EQ(h.y->type.dtype, DType::kFloat16);
  // Inside, everything is float32: the input's only reader is a Cast to float32, the output is
  // made by a Cast to float16 of a float32 value.
  const auto readers = h.g.users(h.x);
  ASSERT_EQ(readers.size(), 1u);
  EXPECT_EQ(readers[0]->op, "Cast");
  EXPECT_EQ(readers[0]->attrs.get_string("to"), "float32");
  ASSERT_NE(h.y->producer, nullptr);
  EXPECT_EQ(h.y->producer->op, "Cast");
  EXPECT_EQ(h.y->producer->attrs.get_string("to"), "float16");
  EXPECT_EQ(h.y->producer->input(0)->type.dtype, DType::kFloat32);
  for (const Node* n : h.g.nodes()) {
    for (const Value* in : n->inputs) {
      if (in != h.x) {
        EXPECT_EQ(in->type.dtype, DType::kFloat32) << n->label();
      }
    }
    for (const Value* o : n->outputs) {
      if (o != h.y) {
        EXPECT_EQ(o->type.dtype, DType::kFloat32) << n->label();
      }
    }
  }
  // The inner Cast became float32 -> float32: algebraic simplification removes it.
  EXPECT_EQ(count_op(h.g, "Cast"), 3u);
  PassContext plain;
  EXPECT_TRUE(AlgebraicSimplify().run(h.g, plain));
  verify(h.g);
  EXPECT_EQ(count_op(h.g, "Cast"), 2u);
  // x * 0.5 + 0.25, computed by hand; every value is exact in float16.
  const Tensor x = Tensor::from_vector<float>({1, 4}, {1.f, -2.f, 3.5f, 100.f}).cast(DType::kFloat16);
  const auto out = run_reference(h.g, {{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].tensor.dtype(), DType::kFloat16);
  const std::vector<double> want = {0.75, -0.75, 2.0, 50.25};
  EXPECT_EQ(out[0].tensor.to_doubles(), want);
}

TEST(FloatCompute, KeepsTheModelsNumericsAtOtherPrecisions) {
  for (Precision p : {Precision::kAuto, Precision::kFp16, Precision::kBf16, Precision::kInt8}) {
    HalfGraph h;
    build_half_graph(h);
    PassContext ctx;
    ctx.precision = p;
    ctx.target = yoloc::targets::cpu_attributes();
    EXPECT_FALSE(FloatCompute().run(h.g, ctx));
    EXPECT_EQ(count_op(h.g, "Cast"), 1u);
    EXPECT_EQ(h.y->producer->op, "Add");
    EXPECT_EQ(h.y->producer->input(1)->data.dtype(), DType::kFloat16);
  }
}

TEST(FloatCompute, LeavesFloat32GraphsAlone) {
  Graph g;
  Value* x = input(g, "x", {1, 4});
  g.outputs.push_back(node(g, "Add", {x, g.add_constant("b", scalar(2))}));
  PassContext ctx;
  ctx.precision = Precision::kFp32;
  EXPECT_FALSE(FloatCompute().run(g, ctx));
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST(FloatCompute, RunsInThePipelineAtFp32) {
  HalfGraph h;
  build_half_graph(h);
  PassContext ctx;
  ctx.precision = Precision::kFp32;
  ctx.target = yoloc::targets::cpu_attributes();
  optimize(h.g, ctx);
  EXPECT_EQ(count_op(h.g, "Cast"), 2u);
  EXPECT_EQ(h.g.outputs[0]->type.dtype, DType::kFloat16);
}

namespace {

// The YOLOX / YOLOv5 (before v6.0) Focus stem on x [1, 3, 8, 12]: the pixel phases (dy, dx) in
// the given order, each a Slice of the rows then one of the columns (or one Slice of both axes),
// concatenated on channels, then a Conv of the 12 channels with `attrs`.
Value* focus_stem(Graph& g, Value* x, const std::vector<std::pair<int64_t, int64_t>>& phases,
                  Attrs attrs, Shape w_shape, bool one_slice = false, int64_t step = 2) {
  const int64_t big = 1 << 30;
  std::vector<Value*> parts;
  for (const auto& [dy, dx] : phases) {
    if (one_slice) {
      parts.push_back(node(g, "Slice",
                           {x, int_list(g, {dy, dx}), int_list(g, {big, big}), int_list(g, {2, 3}),
                            int_list(g, {step, step})}));
      continue;
    }
    Value* rows =
        node(g, "Slice",
             {x, int_list(g, {dy}), int_list(g, {big}), int_list(g, {2}), int_list(g, {step})});
    parts.push_back(node(
        g, "Slice",
        {rows, int_list(g, {dx}), int_list(g, {big}), int_list(g, {-1}), int_list(g, {step})}));
  }
  Value* y = node(g, "Concat", parts, int_attr("axis", 1));
  Value* w = g.add_constant("w", random_tensor(w_shape, 7));
  Value* b = g.add_constant("b", random_tensor({w_shape[0]}, 8));
  return node(g, "Conv", {y, w, b}, std::move(attrs));
}

const std::vector<std::pair<int64_t, int64_t>> kYoloxPhases = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};

}  // namespace

TEST(SpaceToDepthConv, FocusStemBecomesAStride2ConvOfTheImage) {
  struct Case {
    std::vector<std::pair<int64_t, int64_t>> phases;
    Attrs attrs;
    Shape w;
    bool one_slice;
  };
  Attrs asym;  // a 2x3 window, uneven pads
  asym.set("kernel_shape", std::vector<int64_t>{2, 3});
  asym.set("pads", std::vector<int64_t>{1, 0, 0, 1});
  const std::vector<Case> cases = {
      {kYoloxPhases, conv_attrs(3, 1), {5, 12, 3, 3}, false},
      {{{1, 1}, {0, 0}, {1, 0}, {0, 1}}, conv_attrs(3, 1), {5, 12, 3, 3}, true},
      {kYoloxPhases, asym, {4, 12, 2, 3}, false},
  };
  for (const Case& c : cases) {
    Graph g;
    Value* x = input(g, "x", {1, 3, 8, 12});
    if (&c == &cases[1]) x->type.dims[0] = Dim::sym("batch");  // a symbolic batch folds too
    g.outputs.push_back(node(g, "Relu", {focus_stem(g, x, c.phases, c.attrs, c.w, c.one_slice)}));
    auto before = g.clone();
    EXPECT_TRUE(apply<SpaceToDepthConv>(g));
    EXPECT_EQ(count_op(g, "Slice"), 0u);
    EXPECT_EQ(count_op(g, "Concat"), 0u);
    const Node* conv = g.outputs[0]->producer->input(0)->producer;
    ASSERT_EQ(conv->op, "Conv");
    EXPECT_EQ(conv->input(0), x);
    EXPECT_EQ(conv->attrs.get_ints("kernel_shape"), (std::vector<int64_t>{2 * c.w[2], 2 * c.w[3]}));
    EXPECT_EQ(conv->attrs.get_ints("strides"), (std::vector<int64_t>{2, 2}));
    EXPECT_LE(max_rel_diff(*before, g, {{"x", random_tensor({1, 3, 8, 12}, 9)}}), 1e-6);
  }
}

TEST(SpaceToDepthConv, LeavesOtherSlicesAlone) {
  for (int variant = 0; variant < 3; ++variant) {
    Graph g;
    Value* x = input(g, "x", {1, 3, 12, 12});
    auto phases = kYoloxPhases;
    if (variant == 0) phases[3] = {0, 0};  // one phase twice, (1, 1) missing
    const int64_t step = variant == 1 ? 3 : 2;
    Attrs attrs = conv_attrs(3, 1);
    if (variant == 2) attrs.set("strides", std::vector<int64_t>{2, 2});
    g.outputs.push_back(focus_stem(g, x, phases, attrs, {4, 12, 3, 3}, false, step));
    EXPECT_FALSE(apply<SpaceToDepthConv>(g)) << "variant " << variant;
    EXPECT_EQ(count_op(g, "Concat"), 1u);
  }
}

TEST(Pipeline, OptionalPassesCanBeLeftOut) {
  PassContext ctx;
  const size_t all = make_pipeline(ctx).size();
  ctx.disabled = {"space_to_depth_conv", "cse"};
  const auto p = make_pipeline(ctx);
  EXPECT_EQ(p.size(), all - 2);
  for (const auto& pass : p) {
    EXPECT_NE(pass->name(), "space_to_depth_conv");
    EXPECT_NE(pass->name(), "cse");
  }
  // The passes the kernels rely on cannot be left out; a misspelt name is no silent no-op.
  for (const char* name : {"fusion", "space_to_depth"}) {
    ctx.disabled = {name};
    EXPECT_THROW(make_pipeline(ctx), UserError) << name;
  }
}
