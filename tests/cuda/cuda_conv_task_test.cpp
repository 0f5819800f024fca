// CUDA conv tasks from the groups the optimizer makes (target "cuda"): a C2f block, whose split
// and concat are views, gives each conv the channel slices of the buffers it reads and writes.
#include <gtest/gtest.h>

#include "../unit/graph_builder.h"
#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/tasks.h"
#include "codegen/cuda/tc_conv_template.h"
#include "codegen/memory_plan.h"
#include "passes/pipeline.h"
#include "targets/cuda/cuda_attributes.h"

namespace yoloc::codegen::cuda {
namespace {

using yoloc::testing::conv;
using yoloc::testing::input;
using yoloc::testing::node;

TEST(CudaConvTask, C2fSlicesFromViews) {
  Graph g;
  Value* x = input(g, "x", {1, 32, 12, 10});
  Value* a = node(g, "SiLU", {conv(g, x, 32, 32, 1, 1)});  // cv1
  Attrs split;
  split.set("axis", int64_t{1});
  Node* s = g.add_node(
      "Split", {a, g.add_constant("split", Tensor::from_vector<int64_t>({2}, {16, 16}))}, 2, split);
  infer_node(*s);
  Value* y0 = s->outputs[0];
  Value* y1 = s->outputs[1];
  Value* m = node(g, "SiLU", {conv(g, y1, 16, 16, 3, 3)});                        // m.0.cv1
  Value* y2 = node(g, "Add", {y1, node(g, "SiLU", {conv(g, m, 16, 16, 3, 5)})});  // m.0.cv2 + y1
  Attrs cat;
  cat.set("axis", int64_t{1});
  Value* c = node(g, "Concat", {y0, y1, y2}, cat);
  Value* cv2 = node(g, "SiLU", {conv(g, c, 48, 32, 1, 7)});
  // A plain conv as the output: the fusion pass takes a trailing chain from a concat to the
  // outputs for a detect head.
  g.outputs = {conv(g, cv2, 32, 16, 1, 9)};
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  optimize(g, ctx);

  std::vector<CudaConvTask> tasks;
  for (const FusedGroup& grp : g.groups) {
    if (!grp.is_kernel()) continue;
    const auto t = cuda_conv_task_from_group(g, grp, DType::kFloat16, DType::kFloat16);
    ASSERT_TRUE(t.has_value()) << grp.name;
    EXPECT_TRUE(TensorCoreConvTemplate::matches(*t)) << t->key();
    tasks.push_back(*t);
  }
  ASSERT_EQ(tasks.size(), 5u);
  // cv1 writes the whole concat buffer's first 32 channels (the split of its output is a view).
  EXPECT_EQ(tasks[0].in, (ChannelSlice{32, 0}));
  EXPECT_EQ(tasks[0].out, (ChannelSlice{48, 0}));
  // m.0.cv1 reads the second half of cv1's output inside the concat buffer.
  EXPECT_EQ(tasks[1].in, (ChannelSlice{48, 16}));
  EXPECT_EQ(tasks[1].out, (ChannelSlice{16, 0}));
  // m.0.cv2 adds the same slice and writes the concat's last 16 channels.
  EXPECT_TRUE(tasks[2].conv.residual);
  EXPECT_EQ(tasks[2].res, (ChannelSlice{48, 16}));
  EXPECT_EQ(tasks[2].out, (ChannelSlice{48, 32}));
  // cv2 reads the concat buffer whole.
  EXPECT_EQ(tasks[3].in, (ChannelSlice{48, 0}));
  EXPECT_EQ(tasks[3].out, (ChannelSlice{32, 0}));
  EXPECT_NE(tasks[2].key().find("out48+32 res48+16"), std::string::npos) << tasks[2].key();
}

TEST(CudaConvTask, NchwOutputKeyHasAnNhwcTwin) {
  CudaConvTask t;
  t.conv.n = t.conv.c = t.conv.h = t.conv.w = t.conv.k = t.conv.oh = t.conv.ow = 4;
  t.conv.kh = t.conv.kw = t.conv.sh = t.conv.sw = t.conv.dh = t.conv.dw = 1;
  t.dtype = t.out_dtype = DType::kFloat16;
  const std::string nhwc = t.key();
  EXPECT_EQ(nhwc_output_twin(nhwc), std::nullopt);
  t.out_nchw = true;
  ASSERT_NE(t.key(), nhwc);
  EXPECT_EQ(nhwc_output_twin(t.key()), nhwc);
  EXPECT_EQ(nhwc_output_twin(" out-nchw"), std::nullopt);
}

// A neck: f = SiLU(conv(x)) (the direct template's, on the NCHW image) upsampled by a nearest
// Resize (the attributes and scale given) into the first slice of a concat with a later conv's
// output, f also read by another conv.
std::unique_ptr<Graph> upsample_neck(const std::string& coord, const std::string& nearest,
                                     float scale = 2) {
  auto gp = std::make_unique<Graph>();
  Graph& g = *gp;
  const auto up_size = static_cast<int64_t>(6 * scale);
  Value* f = node(g, "SiLU", {conv(g, input(g, "x", {1, 3, 6, 6}), 3, 32, 1, 1)});
  Attrs r;
  r.set("mode", std::string("nearest"));
  r.set("coordinate_transformation_mode", coord);
  r.set("nearest_mode", nearest);
  Value* scales =
      g.add_constant("scales", Tensor::from_vector<float>({4}, {1, 1, scale, scale}));
  Value* up = node(g, "Resize", {f, nullptr, scales}, r);
  Value* b = node(g, "SiLU", {conv(g, input(g, "b", {1, 3, up_size, up_size}), 3, 16, 1, 3)});
  Attrs cat;
  cat.set("axis", int64_t{1});
  Value* c = node(g, "Concat", {up, b}, cat);
  // Plain convs as the outputs: a trailing chain from the concat would be a detect tail.
  g.outputs = {conv(g, c, 48, 8, 1, 5), conv(g, f, 32, 8, 3, 7)};
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  optimize(g, ctx);
  return gp;
}

// The Resize of a conv's output becomes that conv's upsampled copy (asymmetric / floor, and
// half_pixel / round_prefer_floor, which reads the same rows at 2x), into the concat's first
// slice; the memory plan starts the concat buffer's life at that conv. A scale of 1.5 is not an
// integer: the Resize keeps its own kernel (the generic template's).
TEST(CudaConvTask, NearestResizeBecomesUpsampledCopy) {
  for (const auto& [coord, nearest] :
       {std::pair{"asymmetric", "floor"}, std::pair{"half_pixel", "round_prefer_floor"}}) {
    SCOPED_TRACE(coord);
    const auto g = upsample_neck(coord, nearest);
    const std::vector<CudaTask> tasks = extract_cuda_tasks(*g);
    ASSERT_EQ(tasks.size(), 4u);
    const CudaTask& t = tasks[0];
    EXPECT_NE(t.key.find(" up2x2 out48+0"), std::string::npos) << t.key;
    ASSERT_EQ(t.absorbed.size(), 1u);
    const Node* resize = nullptr;
    const Node* first_conv = nullptr;
    int conv_at = -1, at = 0;
    for (const Node* n : g->nodes()) {
      if (n->op == "Resize") resize = n;
      if (n->op == "Conv" && !first_conv) {
        first_conv = n;
        conv_at = at;
      }
      ++at;
    }
    ASSERT_TRUE(resize && first_conv);
    EXPECT_EQ(t.absorbed[0], resize->group);
    EXPECT_EQ(t.group, first_conv->group);
    for (const CudaTask& o : tasks) EXPECT_EQ(o.group_name.find("Resize"), std::string::npos);
    const CudaLowered l = t.lower(t.default_config, "k");
    ASSERT_EQ(l.args.size(), 6u);
    EXPECT_EQ(l.args[5].value, resize->outputs[0]);
    EXPECT_TRUE(l.args[5].output);
    const MemoryPlan plan = plan_memory(*g, merged_groups(tasks));
    const ValueSlot& slot = plan.values.at(resize->outputs[0]->name);
    EXPECT_LE(plan.allocations.at(static_cast<size_t>(slot.allocation)).first, conv_at);
    const MemoryPlan plain = plan_memory(*g);  // the Resize's own time: later
    EXPECT_GT(plain.allocations.at(static_cast<size_t>(
                                       plain.values.at(resize->outputs[0]->name).allocation))
                  .first,
              conv_at);
  }
  const auto g = upsample_neck("asymmetric", "floor", 1.5f);
  const std::vector<CudaTask> tasks = extract_cuda_tasks(*g);
  ASSERT_EQ(tasks.size(), 5u);
  for (const CudaTask& t : tasks) {
    EXPECT_TRUE(t.absorbed.empty());
    EXPECT_EQ(t.key.find(" up"), std::string::npos) << t.key;
  }
}

TEST(CudaConvTask, DenseTaskAndSliceChecks) {
  CudaConvTask t = CudaConvTask::dense(ConvTask::make(1, 16, 8, 8, 32, 3, 1, 1), DType::kFloat16,
                                       DType::kFloat32);
  EXPECT_TRUE(t.slices_valid());
  EXPECT_EQ(t.key(),
            "cuda_conv2d_nhwc f16->f32 n1 c16 h8 w8 k32 3x3 s1x1 p1x1 d1x1 none in16+0 "
            "out32+0");
  t.out = {40, 10};  // 10 + 32 > 40
  EXPECT_FALSE(t.slices_valid());
  EXPECT_FALSE(TensorCoreConvTemplate::matches(t));
}

}  // namespace
}  // namespace yoloc::codegen::cuda
