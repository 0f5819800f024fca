// A whole CUDA program in the host emulation (cuda_emulator.h): a small two-level YOLOv8-like
// detector at batch 2, optimized for "cuda" at fp16 and compiled (NVRTC) as `yoloc compile` does,
// then every launch run in order on a host arena and weights blob with the program's own
// bindings, and the output compared with the reference executor on the graph as built. It covers
// what the template tests cannot: task extraction, storage types, views and the memory plan
// together, here the detect head's convs written NCHW into channel slices of each level's concat
// (strided at batch 2), the tail (the detect-tail template) reading them through reshape views,
// a neck's nearest Resize written by the conv it reads as its upsampled copy (no launch of its
// own; the memory plan keeps the concat it lands in alive from that conv on), or at batch 3 read
// from that conv's output by the 1x1 conv reading the concat (no launch either), a depthwise
// conv (the depthwise template), and with split heads the class convs storing the class scores
// into the output (the tail then decodes the boxes only; the memory plan keeps the output alive
// from the first of them on and stores no class map).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "../unit/graph_builder.h"
#include "codegen/cuda/conv_upsample.h"
#include "codegen/cuda/cuda_compiler.h"
#include "cuda_emulator.h"
#include "passes/pipeline.h"
#include "runtime/cuda/stream_plan.h"
#include "targets/cuda/cuda_attributes.h"

namespace yoloc::codegen::cuda::testing {
namespace {

using yoloc::testing::input;
using yoloc::testing::node;

Value* ints(Graph& g, std::vector<int64_t> v) {
  return g.add_constant("ints", Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

// A "same" k x k conv with weights scaled so that outputs stay of order one (fp16 storage then
// rounds them by about 2^-11, not by the large magnitudes unscaled random weights compound to).
Value* conv(Graph& g, Value* x, int64_t in_c, int64_t out_c, int64_t k, uint32_t seed) {
  const float s = 1.7f / std::sqrt(static_cast<float>(in_c * k * k));
  Value* w = g.add_constant("w", yoloc::testing::random_tensor({out_c, in_c, k, k}, seed, -s, s));
  Value* b = g.add_constant("b", yoloc::testing::random_tensor({out_c}, seed + 1, -0.5f, 0.5f));
  return node(g, "Conv", {x, w, b}, yoloc::testing::conv_attrs(k, k / 2));
}

// A depthwise "same" k x k conv of c channels (YOLOX's DWConv).
Value* dwconv(Graph& g, Value* x, int64_t c, int64_t k, uint32_t seed) {
  const float s = 1.7f / std::sqrt(static_cast<float>(k * k));
  Value* w = g.add_constant("w", yoloc::testing::random_tensor({c, 1, k, k}, seed, -s, s));
  Value* b = g.add_constant("b", yoloc::testing::random_tensor({c}, seed + 1, -0.5f, 0.5f));
  return node(g, "Conv", {x, w, b}, yoloc::testing::conv_attrs(k, k / 2, c));
}

Attrs int_attr(const char* name, int64_t v) {
  Attrs a;
  a.set(name, v);
  return a;
}

// Levels of 8x8 and 4x4 (a max pool between), each with a box branch (two 3x3, then 1x1 to 16 =
// 4 sides x 4 bins) and a class branch (two 3x3, then 1x1 to 6) concatenated to 22 channels and
// flattened; the levels concatenated along the anchors and split; the DFL (Softmax over the
// bins, 1x1 conv) and the class Sigmoid into [2, 10, 80], the anchors innermost. With
// `split_heads`, each branch flattened on its own and the levels' box and class maps
// concatenated apart (as YOLO11 exports): the class convs' outputs are then theirs alone, and
// at fp16 they store the class scores straight into the output (CudaConvTask::scores).
std::unique_ptr<Graph> detector(bool split_heads = false, int64_t n = 2) {
  auto gp = std::make_unique<Graph>();
  Graph& g = *gp;
  Value* x = input(g, "x", {n, 8, 8, 8});
  Value* f1 = node(g, "SiLU", {conv(g, x, 8, 16, 3, 1)});
  Attrs pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2});
  pool.set("strides", std::vector<int64_t>{2, 2});
  Value* f2 = node(g, "MaxPool", {f1}, pool);
  // A neck: the 4x4 level's conv upsampled 2x by a nearest Resize (which the conv writes as its
  // upsampled copy) into a concat with the 8x8 level, then a 1x1 conv.
  Value* p2 = node(g, "SiLU", {conv(g, f2, 16, 16, 1, 5)});
  Attrs nearest;
  nearest.set("mode", std::string("nearest"));
  nearest.set("coordinate_transformation_mode", std::string("asymmetric"));
  nearest.set("nearest_mode", std::string("floor"));
  Value* scales = g.add_constant("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}));
  Value* up = node(g, "Resize", {p2, nullptr, scales}, nearest);
  Value* p1 = node(g, "SiLU", {conv(g, node(g, "Concat", {up, f1}, int_attr("axis", 1)), 32, 16,
                                    1, 7)});
  // A depthwise conv (the depthwise template) on the 8x8 level.
  p1 = node(g, "SiLU", {dwconv(g, p1, 16, 3, 8)});
  std::vector<Value*> levels, box_levels, cls_levels;
  uint32_t seed = 10;
  const auto branch = [&](Value* f, int64_t k) {
    Value* a = node(g, "SiLU", {conv(g, f, 16, 16, 3, seed)});
    Value* b = node(g, "SiLU", {conv(g, a, 16, 16, 3, seed + 2)});
    seed += 4;
    return conv(g, b, 16, k, 1, seed++);
  };
  for (Value* f : {p1, p2}) {
    Value* box = branch(f, 16);
    Value* cls = branch(f, 6);
    if (split_heads) {
      box_levels.push_back(node(g, "Reshape", {box, ints(g, {n, 16, -1})}));
      cls_levels.push_back(node(g, "Reshape", {cls, ints(g, {n, 6, -1})}));
      continue;
    }
    Value* cat = node(g, "Concat", {box, cls}, int_attr("axis", 1));
    levels.push_back(node(g, "Reshape", {cat, ints(g, {n, 22, -1})}));
  }
  Value *box_all = nullptr, *cls_all = nullptr;
  if (split_heads) {
    box_all = node(g, "Concat", box_levels, int_attr("axis", 2));
    cls_all = node(g, "Concat", cls_levels, int_attr("axis", 2));
  } else {
    Value* all = node(g, "Concat", levels, int_attr("axis", 2));
    Node* split = g.add_node("Split", {all, ints(g, {16, 6})}, 2, int_attr("axis", 1));
    infer_node(*split);
    box_all = split->outputs[0];
    cls_all = split->outputs[1];
  }
  Value* bins = node(g, "Reshape", {box_all, ints(g, {n, 4, 4, 80})});
  Attrs perm;
  perm.set("perm", std::vector<int64_t>{0, 2, 1, 3});
  Value* soft = node(g, "Softmax", {node(g, "Transpose", {bins}, perm)}, int_attr("axis", 1));
  Value* sides = node(g, "Reshape", {conv(g, soft, 4, 1, 1, 99), ints(g, {n, 4, 80})});
  Value* scores = node(g, "Sigmoid", {cls_all});
  g.outputs.push_back(node(g, "Concat", {sides, scores}, int_attr("axis", 1)));
  return gp;
}

// Compiled at `precision` (fp16: tensor-core convs, fp16 activations; fp32: SIMT convs), run,
// and compared with the reference within `tolerance` (relative to max(1, |want|)).
// With `splitk`, for sm_90 with every tensor-core conv that allows it split in 2 (the thread-block
// clusters of split-K, in the program as compiled). With `b2b` (fp16), each branch's last 3x3
// conv and its 1x1 run as one back-to-back kernel, the intermediate never stored. With `halo`,
// every tensor-core conv that allows it takes halo tiles 8 pixels wide (16 where 8 is invalid).
// At a batch above kUpsampleMaxBatch the neck's 1x1 conv reads its input's upsampled part from
// the 4x4 conv's output (CudaConvTask::up_in; fp16), and the concat's slice is never written.
//
// With `lanes` > 1 the program is compiled from the graph at batch / lanes and runs that many
// copies of its kernels (batch_lanes.h), each on its slice of the batch and the reference's input.
void run_detector(Precision precision, float tolerance, bool splitk = false, bool b2b = true,
                  bool halo = false, bool split_heads = false, int64_t batch = 2, int lanes = 1) {
  const Tensor xin = yoloc::testing::random_tensor({batch, 8, 8, 8}, 7);
  const Tensor want = run_reference(*detector(split_heads, batch), {{"x", xin}}).at(0).tensor;

  std::unique_ptr<Graph> g = detector(split_heads, batch / lanes);
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = precision;
  optimize(*g, ctx);
  CudaCompileOptions options;
  options.lanes = lanes;
  options.arch = splitk ? "sm_90" : "sm_80";
  if (b2b) options.b2b = B2bPolicy::all();
  const std::vector<CudaTask> tasks = extract_cuda_tasks(*g, splitk ? 90 : 80, options.b2b);
  int split = 0, halos = 0, halo_pairs = 0;
  for (const CudaTask& t : tasks) {
    if (t.template_name != "tc_conv") continue;
    ScheduleConfig cfg = t.default_config;
    cfg.set("splitk", 2);
    if (splitk && t.valid(cfg)) {
      options.configs[t.key] = cfg;
      ++split;
    }
    for (int64_t w : {8, 16}) {
      ScheduleConfig h = t.default_config;
      h.set("splitk", 1);
      h.set("l1", 0);
      h.set("halo", w);
      if (halo && t.valid(h)) {
        options.configs[t.key] = h;
        ++halos;
        halo_pairs += t.second_group >= 0;
        break;
      }
    }
  }
  if (splitk) {
    EXPECT_GE(split, 4);
  }
  if (halo) {
    EXPECT_GE(halos, 4);
    EXPECT_GE(halo_pairs, b2b ? 2 : 0);
  }
  const CudaBuild build = compile_cuda(*g, options);
  ASSERT_EQ(tasks.size(), build.tasks.size());
  EXPECT_EQ(build.tuned, split + halos);

  // The kernels as compile_cuda lowered them (same configs and symbols), built for the host.
  std::vector<CudaKernel> conv_kernels;
  GenericKernels generic;
  std::map<std::string, CudaKernel> by_symbol;
  size_t lowered_launches = 0;  // one lane's
  int nchw_convs = 0, detect_tails = 0, upsampled = 0, up_in = 0, pairs = 0, depthwise = 0,
      scores = 0, boxes = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const CudaLowered l = tasks[i].lower(build.tasks[i].config, fmt::format("yc_t{}", i));
    lowered_launches += l.launches.size();
    // Detect-tail kernels (no shared memory, no barrier) run sequentially as generic ones do.
    if (tasks[i].template_name == "generic" || tasks[i].template_name == "detect_tail") {
      detect_tails += tasks[i].template_name == "detect_tail";
      generic.source += l.source;
      for (const CudaKernel& k : l.launches) generic.launches.push_back(k);
    } else {
      CudaKernel k = l.launches.at(0);
      k.source = l.source;
      conv_kernels.push_back(k);
      const std::string& key = tasks[i].key;
      pairs += key.find(" b2b ") != std::string::npos;
      depthwise += tasks[i].template_name == "dw_conv";
      upsampled += key.find(" up2x2 out32+0") != std::string::npos;
      up_in += key.find(" upin0+16 2x2 from16+0") != std::string::npos;
      // " out-nchw", or " nchw" for a pair whose second stage writes NCHW.
      nchw_convs += key.size() > 5 && (key.compare(key.size() - 5, 5, "-nchw") == 0 ||
                                       key.compare(key.size() - 5, 5, " nchw") == 0);
      scores += key.find(" scores") != std::string::npos;
      boxes += key.find(" boxes") != std::string::npos;
    }
    for (const CudaKernel& k : l.launches) by_symbol[k.symbol] = k;
  }
  // The 1x1 box and class convs of both levels, into their level's concat buffer (with split
  // heads, each into its own; the class convs of fp16 into the output, as class scores); with
  // b2b, each in one kernel with the 3x3 conv before it, and the box pairs then decode the boxes
  // into the output too).
  const int want_scores = split_heads && precision == Precision::kFp16 ? 2 : 0;
  const int want_boxes = want_scores && b2b ? 2 : 0;
  EXPECT_EQ(scores, want_scores);
  EXPECT_EQ(boxes, want_boxes);
  EXPECT_EQ(nchw_convs, 4 - want_scores - want_boxes);
  // The neck's Resize is the 4x4 conv's upsampled copy, into the concat's first slice; above
  // kUpsampleMaxBatch (fp16) the neck's 1x1 conv reads that slice from the 4x4 conv's output.
  const int64_t lane_batch = batch / lanes;
  const bool reads_up = lane_batch > kUpsampleMaxBatch && precision == Precision::kFp16;
  EXPECT_EQ(upsampled, lane_batch > kUpsampleMaxBatch ? 0 : 1);
  EXPECT_EQ(up_in, reads_up ? 1 : 0);
  EXPECT_EQ(depthwise, 1);
  EXPECT_EQ(pairs, b2b && precision == Precision::kFp16 ? 4 : 0);
  // The DFL tail (distances and class sigmoids, no box decode) takes the detect-tail template,
  // unless the head convs store the boxes and the class scores.
  EXPECT_EQ(detect_tails, want_boxes ? 0 : 1);
  const EmulatedKernels convs(conv_kernels);
  const EmulatedGenericKernels generics(generic);

  const runtime::cuda::CudaProgram& prog = build.program;
  EXPECT_EQ(prog.lanes, lanes);
  ASSERT_EQ(prog.launches.size(), static_cast<size_t>(lanes) * lowered_launches);
  if (lanes > 1) {
    // The lanes share no bytes but the input and the output: on the runtime's streams, no
    // launch of one lane waits for one of another.
    const auto access = runtime::cuda::launch_accesses(prog);
    ASSERT_TRUE(access.has_value());
    const runtime::cuda::StreamPlan plan = runtime::cuda::plan_streams(*access, 8);
    int waits = 0;
    for (size_t j = 0; j < plan.steps.size(); ++j) {
      for (const int d : plan.steps[j].waits) {
        ++waits;
        EXPECT_EQ(prog.launches[static_cast<size_t>(d)].task["lane"], prog.launches[j].task["lane"])
            << "launch " << j << " waits for launch " << d << " of another lane";
      }
    }
    EXPECT_GE(plan.streams, lanes);
    EXPECT_GT(waits, 0);  // the branches of each lane do wait for each other
  }
  std::vector<uint8_t> arena(prog.arena_bytes, 0x7f);  // NaNs in float16 and float32
  std::vector<uint8_t> weights(build.weights.begin(), build.weights.end());
  ASSERT_EQ(prog.input_offsets.size(), 1u);
  std::memcpy(&arena[prog.input_offsets[0]], xin.raw(), xin.nbytes());
  for (const runtime::cuda::CudaLaunch& launch : prog.launches) {
    SCOPED_TRACE(launch.task.dump());
    std::vector<void*> args;
    std::vector<size_t> bytes;
    for (const runtime::Binding& b : launch.args) {
      uint8_t* base = b.buffer == "arena"            ? arena.data()
                      : b.buffer == kCudaWeightsBlob ? weights.data()
                                                     : nullptr;
      if (base) {
        ASSERT_LE(b.offset + b.bytes, b.buffer == "arena" ? arena.size() : weights.size());
      }
      args.push_back(base ? base + b.offset : nullptr);
      bytes.push_back(base ? b.bytes : 0);
    }
    const CudaKernel& k = by_symbol.at(launch.symbol);
    if (launch.task["template"] == "generic" || launch.task["template"] == "detect_tail") {
      EXPECT_EQ(generics.launch(k, args), "");
    } else {
      // (x, w, bias, res, y, up), an upsampled input's source, a b2b pair's (w2, bias2), a box
      // pair's table.
      const std::string key = launch.task["key"].get<std::string>();
      ASSERT_EQ(args.size(), key.find(" b2b ") == std::string::npos
                                 ? (key.find(" upin") == std::string::npos ? 6u : 7u)
                             : key.find(" boxes") == std::string::npos ? 8u
                                                                       : 9u);
      std::vector<EmulatedKernels::Buffer> buffers;
      for (size_t a = 0; a < args.size(); ++a) buffers.push_back({args[a], bytes[a]});
      EXPECT_EQ(convs.launch(k, buffers), "");
    }
  }

  ASSERT_EQ(prog.output_offsets.size(), 1u);
  ASSERT_EQ(g->outputs[0]->type.dtype, DType::kFloat32);
  std::vector<float> got(static_cast<size_t>(want.numel()));
  std::memcpy(got.data(), &arena[prog.output_offsets[0]], got.size() * sizeof(float));
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float w = want.data<float>()[i];
    if (!(std::fabs(got[i] - w) <= tolerance * std::max(1.f, std::fabs(w))) && bad++ < 5) {
      ADD_FAILURE() << "output element " << i << ": got " << got[i] << ", want " << w;
    }
  }
  EXPECT_EQ(bad, 0);
}

// fp16 activations between the kernels: a few units of 2^-11 per op.
TEST(CudaProgramEmulated, Fp16DetectorWithNchwHeadConvsMatchesReference) {
  run_detector(Precision::kFp16, 1e-2f);
}

TEST(CudaProgramEmulated, Fp16DetectorWithoutB2bMatchesReference) {
  run_detector(Precision::kFp16, 1e-2f, false, false);
}

// Without the b2b pairs (which do not split), so that the head's 1x1 convs split too.
TEST(CudaProgramEmulated, Fp16DetectorSplitKOnSm90MatchesReference) {
  run_detector(Precision::kFp16, 1e-2f, true, false);
}

// Halo tiles in the whole program, without the b2b pairs.
TEST(CudaProgramEmulated, Fp16DetectorWithHaloTilesMatchesReference) {
  run_detector(Precision::kFp16, 1e-2f, false, false, true);
}

// And with the b2b pairs, whose first stages then also run on halo tiles.
TEST(CudaProgramEmulated, Fp16DetectorWithHaloTilesInB2bPairsMatchesReference) {
  run_detector(Precision::kFp16, 1e-2f, false, true, true);
}

TEST(CudaProgramEmulated, Fp16DetectorWithSplitHeadsStoresScoresAndBoxesFromTheConvs) {
  run_detector(Precision::kFp16, 1e-2f, false, true, false, true);
  run_detector(Precision::kFp16, 1e-2f, false, false, false, true);
}

// Batch 3: the neck's Resize fused into the 1x1 conv reading it (NaN bytes in the arena where
// the concat's upsampled slice would be: a read of it fails the comparison).
TEST(CudaProgramEmulated, Fp16DetectorAtBatch3ReadsTheUpsampledInputInItsConv) {
  run_detector(Precision::kFp16, 1e-2f, false, true, false, true, 3);
  run_detector(Precision::kFp16, 1e-2f, false, false, false, false, 3);
}

// Batch 4 as two lanes of 2, and batch 6 as three lanes of 2 (split heads: the class convs store
// their scores into the shared output, each lane into its own images).
TEST(CudaProgramEmulated, Fp16DetectorInLanesMatchesReference) {
  run_detector(Precision::kFp16, 1e-2f, false, true, false, false, 4, 2);
  run_detector(Precision::kFp16, 1e-2f, false, true, false, true, 6, 3);
}

TEST(CudaProgramEmulated, Fp32DetectorWithNchwHeadConvsMatchesReference) {
  run_detector(Precision::kFp32, 1e-4f);
  run_detector(Precision::kFp32, 1e-4f, false, true, false, true);  // no scores: SIMT convs
}

// B2bPolicy::kMeasured fuses a pair only where it and both its convs have a time and the pair's
// is below the sum of the two by more than the margin.
TEST(CudaB2bPolicy, MeasuredFusesThePairsTimedFasterThanTheirTwoConvs) {
  std::unique_ptr<Graph> g = detector();
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = Precision::kFp16;
  optimize(*g, ctx);
  const std::vector<CudaTask> alone = extract_cuda_tasks(*g, 80);
  std::vector<std::string> pairs;
  for (const CudaTask& t : extract_cuda_tasks(*g, 80, B2bPolicy::all()))
    if (t.second_group >= 0) pairs.push_back(t.key);
  ASSERT_GE(pairs.size(), 2u);
  const auto keys = [&](const B2bPolicy& p) {
    std::set<std::string> out;
    for (const CudaTask& t : extract_cuda_tasks(*g, 80, p)) out.insert(t.key);
    return out;
  };
  B2bPolicy measured{B2bPolicy::Mode::kMeasured, {}};
  EXPECT_EQ(keys(measured).size(), alone.size()) << "no times: no pair";
  for (const CudaTask& t : alone) measured.seconds[t.key] = 1e-4;
  measured.seconds[pairs[0]] = 1.9e-4;  // 10 us faster than its two convs (2e-4)
  measured.seconds[pairs[1]] = 2.1e-4;  // slower
  std::set<std::string> chosen = keys(measured);
  EXPECT_TRUE(chosen.contains(pairs[0]));
  EXPECT_FALSE(chosen.contains(pairs[1]));
  EXPECT_EQ(chosen.size(), alone.size() - 1);
  // Faster, but by less than the margin (3 us).
  measured.seconds[pairs[1]] = 1.99e-4;
  chosen = keys(measured);
  EXPECT_FALSE(chosen.contains(pairs[1]));
  measured.margin_s = 0;
  chosen = keys(measured);
  EXPECT_TRUE(chosen.contains(pairs[1]));
  measured.seconds[pairs[1]] = 2.1e-4;
  // A pair whose convs were not both timed stays apart, however fast: exactly two convs' times
  // (its two) decide pairs[0].
  int needed = 0;
  for (const CudaTask& t : alone) {
    B2bPolicy partial = measured;
    partial.seconds.erase(t.key);
    needed += keys(partial).contains(pairs[0]) ? 0 : 1;
  }
  EXPECT_EQ(needed, 2);
}

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
