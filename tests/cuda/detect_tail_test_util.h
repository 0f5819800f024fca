#pragma once
/// What the detect-tail template tests share (host emulation and GPU): synthetic DFL tails in the
/// forms the Ultralytics exports write (yolov8's Transpose + Softmax on axis 1, YOLO11's
/// Transpose / Softmax(-1) / Transpose, one head conv per level split into box and class
/// channels or two, xywh or xyxy decode, any DFL weights and bias), their tail groups as
/// detect-tail tasks alongside the generic tests' case of the same group (generic_test_util.h:
/// buffers, reference outputs from the reference executor on the group alone), and the kernel's
/// arguments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "codegen/cuda/detect_tail_template.h"
#include "generic_test_util.h"

namespace yoloc::codegen::cuda::testing {

/// The form of a synthetic DFL tail.
struct TailSpec {
  int64_t n = 1, size = 640, nc = 80, bins = 16;
  bool v11_softmax = false;  ///< Transpose [0,3,1,2], Softmax(-1), Transpose [0,3,2,1]
  bool split_heads = false;  ///< one conv per level, Split into box and class channels
  bool xyxy = false;         ///< v10's decode (corners), else v8's (centre, size)
  bool random_dfl = false;   ///< random DFL weights and a bias, else 0..R-1
  bool softmax_on_sides = false;  ///< a softmax over the 4 sides (not a DFL: stays generic)
};

/// The DFL tail of TailSpec on head convs over `n` x 8 x (size/s)^2 inputs, s = 8, 16, 32:
/// output [n, 4 + nc, anchors].
inline std::unique_ptr<Graph> dfl_tail_graph(const TailSpec& t) {
  auto g = std::make_unique<Graph>();
  const int64_t dfl = 4 * t.bins;
  std::vector<Value*> box_levels, cls_levels, levels;
  for (int64_t s : {8, 16, 32}) {
    const int64_t hw = t.size / s;
    Value* x = input(*g, fmt::format("p{}", s), {t.n, 8, hw, hw});
    const auto seed = static_cast<uint32_t>(s);
    if (t.split_heads) {
      levels.push_back(node(*g, "Reshape", {conv(*g, x, 8, dfl + t.nc, 1, seed),
                                            shape_const(*g, {t.n, dfl + t.nc, -1})}));
    } else {
      box_levels.push_back(
          node(*g, "Reshape", {conv(*g, x, 8, dfl, 1, seed), shape_const(*g, {t.n, dfl, -1})}));
      cls_levels.push_back(node(*g, "Reshape", {conv(*g, x, 8, t.nc, 1, seed + 1),
                                                shape_const(*g, {t.n, t.nc, -1})}));
    }
  }
  const AnchorGrid grid = anchor_grid(t.size);
  const int64_t a = grid.count();
  Value *box = nullptr, *cls = nullptr;
  if (t.split_heads) {
    Node* split = g->add_node("Split",
                              {node(*g, "Concat", levels, axis_attr(2)),
                               g->add_constant("split", Tensor::from_vector<int64_t>({2}, {dfl, t.nc}))},
                              2, axis_attr(1));
    infer_node(*split);
    box = split->outputs[0];
    cls = split->outputs[1];
  } else {
    box = node(*g, "Concat", box_levels, axis_attr(-1));
    cls = node(*g, "Concat", cls_levels, axis_attr(-1));
  }
  box = node(*g, "Reshape", {box, shape_const(*g, {t.n, 4, t.bins, a})});
  Attrs p;
  if (t.v11_softmax) {
    p.set("perm", std::vector<int64_t>{0, 3, 1, 2});
    box = node(*g, "Softmax", {node(*g, "Transpose", {box}, p)}, axis_attr(-1));
    Attrs q;
    q.set("perm", std::vector<int64_t>{0, 3, 2, 1});
    box = node(*g, "Transpose", {box}, q);
  } else {
    p.set("perm", std::vector<int64_t>{0, 2, 1, 3});
    box = node(*g, "Softmax", {node(*g, "Transpose", {box}, p)},
               axis_attr(t.softmax_on_sides ? 2 : 1));
  }
  std::vector<float> bins(static_cast<size_t>(t.bins));
  std::iota(bins.begin(), bins.end(), 0.f);
  std::vector<Value*> conv_in = {box};
  if (t.random_dfl) {
    conv_in.push_back(
        g->add_constant("dfl", yoloc::testing::random_tensor({1, t.bins, 1, 1}, 71, -1.f, 3.f)));
    conv_in.push_back(g->add_constant("dfl_b", Tensor::from_vector<float>({1}, {0.25f})));
  } else {
    conv_in.push_back(g->add_constant("dfl", Tensor::from_vector<float>({1, t.bins, 1, 1}, bins)));
  }
  box = node(*g, "Conv", conv_in, yoloc::testing::conv_attrs(1, 0));
  box = node(*g, "Reshape", {box, shape_const(*g, {t.n, 4, a})});
  const auto [x1y1, x2y2] = dfl_corners(*g, box, grid);
  Value* decoded = nullptr;
  if (t.xyxy) {
    decoded = node(*g, "Concat", {x1y1, x2y2}, axis_attr(1));
  } else {
    Value* c_xy = node(*g, "Mul", {node(*g, "Add", {x1y1, x2y2}),
                                   g->add_constant("half", Tensor::from_vector<float>({}, {0.5f}))});
    decoded = node(*g, "Concat", {c_xy, node(*g, "Sub", {x2y2, x1y1})}, axis_attr(1));
  }
  Value* st = g->add_constant("strides", Tensor::from_vector<float>({1, a}, grid.strides));
  g->outputs = {node(*g, "Concat", {node(*g, "Mul", {decoded, st}), node(*g, "Sigmoid", {cls})},
                     axis_attr(1))};
  return g;
}

/// One tail group for the detect-tail template: its task (operands stored as `dtype`), and the
/// same group as a generic case for data, reference and comparison.
struct DetectTailCase {
  GroupCase group;
  DetectTailTask task;
};

/// The detect-tail groups of g that the template takes, operands stored as `dtype`; with `nhwc`,
/// the head outputs (4-D values) are dense NHWC instead of as the layouts place them.
inline std::vector<DetectTailCase> detect_tail_cases(const Graph& g, DType dtype,
                                                     const std::string& what, bool nhwc = false) {
  std::vector<DetectTailCase> out;
  const auto operand_of = [&](const Value* v) {
    const Shape s = v->type.static_shape();
    if (nhwc && s.size() == 4) {
      return CudaOperand{v, dtype, {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]}};
    }
    return CudaOperand{v, dtype, placement(g, v).strides};
  };
  for (const FusedGroup& grp : g.groups) {
    if (grp.kind != GroupKind::kDetectTail) continue;
    GroupCase c;
    c.what = fmt::format("{} group {} {}{}", what, grp.id, short_dtype_name(dtype),
                         nhwc ? " nhwc" : "");
    c.graph = &g;
    c.group = grp.id;
    std::string why;
    const auto gt = generic_task_from_group(g, grp, operand_of, &why);
    EXPECT_TRUE(gt.has_value()) << c.what << ": " << why;
    if (!gt) continue;
    c.task = *gt;
    for (const CudaOperand& o : gt->inputs) c.in_offset.push_back(nhwc ? 0 : placement(g, o.value).offset);
    for (const CudaOperand& o : gt->outputs) c.out_offset.push_back(placement(g, o.value).offset);
    auto t = detect_tail_task_from_group(g, grp, operand_of, &why);
    if (!t) {
      std::printf("[refused] %s: %s\n", c.what.c_str(), why.c_str());
      continue;
    }
    c.what += " | " + t->key().substr(0, 200);
    out.push_back({std::move(c), std::move(*t)});
  }
  return out;
}

/// The detect-tail kernel's arguments on the case's host buffers (each at its value's first
/// element): the head outputs, the table, the output.
inline std::vector<void*> detect_tail_args(const DetectTailCase& c, CaseData& d,
                                           std::vector<float>& table) {
  std::vector<void*> args;
  for (const CudaOperand& o : c.task.inputs) {
    size_t k = 0;
    while (k < c.group.task.inputs.size() && c.group.task.inputs[k].value != o.value) ++k;
    EXPECT_LT(k, c.group.task.inputs.size()) << o.value->name << " is no input of the group";
    if (k == c.group.task.inputs.size()) return {};
    args.push_back(d.inputs[k].data() +
                   c.group.in_offset[k] * dtype_size(c.group.task.inputs[k].dtype));
  }
  table = c.task.table;
  table.push_back(0.f);  // never empty
  args.push_back(table.data());
  EXPECT_EQ(c.group.task.outputs.size(), 1u);
  EXPECT_EQ(c.group.task.outputs.at(0).value, c.task.output.value);
  args.push_back(d.outputs[0].data() +
                 c.group.out_offset[0] * dtype_size(c.group.task.outputs[0].dtype));
  return args;
}

}  // namespace yoloc::codegen::cuda::testing
