#pragma once
/// What the SPPF-template tests share (host emulation and GPU): graphs of stride-1 same-size
/// MaxPools over one conv output (chains, pools side by side, concatenated or not), their groups
/// as SPPF tasks alongside the generic tests' operands of the same group (generic_test_util.h:
/// buffers placed as the memory plan places them, reference outputs from the reference executor
/// on the group alone), and the kernel's arguments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/sppf_template.h"
#include "generic_test_util.h"

namespace yoloc::codegen::cuda::testing {

/// A MaxPool of a pools_graph: window, ONNX pads (top, left, bottom, right), and what it reads
/// (-1: the conv output x, else an earlier pool).
struct PoolSpec {
  int64_t kh = 5, kw = 5;
  std::vector<int64_t> pads = {2, 2, 2, 2};
  int parent = -1;
};

/// conv -> the pools -> (concat: Concat of x and the pools, then a conv; else a conv of each
/// pool, the graph's outputs).
inline std::unique_ptr<Graph> pools_graph(int64_t n, int64_t c, int64_t h, int64_t w,
                                          const std::vector<PoolSpec>& pools, bool concat) {
  auto g = std::make_unique<Graph>();
  Value* x = conv(*g, input(*g, "x", {n, 8, h, w}), 8, c, 1, 1);
  std::vector<Value*> ys;
  for (const PoolSpec& p : pools) {
    Attrs a;
    a.set("kernel_shape", std::vector<int64_t>{p.kh, p.kw});
    a.set("pads", p.pads);
    a.set("strides", std::vector<int64_t>{1, 1});
    ys.push_back(node(*g, "MaxPool", {p.parent < 0 ? x : ys.at(static_cast<size_t>(p.parent))}, a));
  }
  if (concat) {
    std::vector<Value*> parts = {x};
    parts.insert(parts.end(), ys.begin(), ys.end());
    const auto width = static_cast<int64_t>(parts.size()) * c;
    g->outputs = {conv(*g, node(*g, "Concat", parts, axis_attr(1)), width, 8, 1, 3)};
  } else {
    for (size_t i = 0; i < ys.size(); ++i) {
      g->outputs.push_back(conv(*g, ys[i], c, 4, 1, static_cast<uint32_t>(5 + i)));
    }
  }
  return g;
}

/// YOLOv5's older SPP: pools 5, 9 and 13 side by side on x, concatenated with it.
inline std::unique_ptr<Graph> spp_graph(int64_t n, int64_t c, int64_t h, int64_t w) {
  return pools_graph(n, c, h, w,
                     {{5, 5, {2, 2, 2, 2}}, {9, 9, {4, 4, 4, 4}}, {13, 13, {6, 6, 6, 6}}}, true);
}

/// One group for the SPPF template: its task (storage `dtype`), and the same group as a generic
/// case for data, reference and comparison.
struct SppfCase {
  GroupCase group;
  SppfTask task;
};

/// The groups of g the SPPF template takes, with operands stored as dtype.
inline std::vector<SppfCase> sppf_cases(const Graph& g, DType dtype, const std::string& what) {
  std::vector<SppfCase> out;
  for (GroupCase& c : generic_cases(g, dtype, what)) {
    const FusedGroup* grp = nullptr;
    for (const FusedGroup& f : g.groups) {
      if (f.id == c.group) grp = &f;
    }
    auto t = grp ? sppf_task_from_group(g, *grp) : std::nullopt;
    if (!t) continue;
    t->dtype = dtype;
    // The generic case's operands are the task's: x, then the outputs in the same order.
    EXPECT_EQ(c.task.inputs.size(), 1u) << c.what;
    EXPECT_EQ(c.task.inputs.at(0).value, t->x) << c.what;
    EXPECT_EQ(c.task.outputs.size(), t->outputs.size()) << c.what;
    for (size_t k = 0; k < t->outputs.size() && k < c.task.outputs.size(); ++k) {
      EXPECT_EQ(c.task.outputs[k].value, t->outputs[k]) << c.what;
      EXPECT_EQ(c.out_offset[k], t->out_slices[k].offset) << c.what;
    }
    EXPECT_EQ(c.in_offset.at(0), t->in.offset) << c.what;
    c.what += " | " + t->key();
    out.push_back({std::move(c), std::move(*t)});
  }
  return out;
}

}  // namespace yoloc::codegen::cuda::testing
