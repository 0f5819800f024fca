#pragma once
/// What the generic-template tests share (host emulation and GPU): small graphs with the group
/// forms the template is for, the groups of an optimized graph that the conv templates leave,
/// their operands placed as a memory plan would place them (a value written into a view Concat,
/// or read from a view Split / Slice, addresses that buffer), the group alone as a graph for the
/// reference executor, operand buffers, and the comparison.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "../unit/graph_builder.h"
#include "codegen/cuda/generic_template.h"
#include "codegen/cuda/simt_conv_template.h"
#include "codegen/cuda/tc_conv_template.h"
#include "core/error.h"
#include "yoloc/half.h"
#include "passes/pipeline.h"
#include "targets/cuda/cuda_attributes.h"

namespace yoloc::codegen::cuda::testing {

using yoloc::testing::conv;
using yoloc::testing::input;
using yoloc::testing::node;

/// Where an operand lies in its buffer: strides, and the element its pointer is at.
struct Placement {
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// v's placement: inside the buffer of the view Concat it is an input of, or of the value a view
/// Split / Slice (steps 1) cut it from; else dense in its layout.
inline Placement placement(const Graph& g, const Value* v, int depth = 0) {
  const size_t rank = v->type.dims.size();
  for (const Node* u : g.users(v)) {
    if (u->op != "Concat" || !u->is_view() || depth > 16) continue;
    auto axis = static_cast<size_t>(u->attrs.get_int("axis", 0) + (u->attrs.get_int("axis", 0) < 0
                                                                       ? static_cast<int64_t>(rank)
                                                                       : 0));
    Placement p = placement(g, u->outputs[0], depth + 1);
    for (const Value* in : u->inputs) {
      if (in == v) break;
      p.offset += in->type.dims[axis].value * p.strides[axis];
    }
    return p;
  }
  const Node* prod = v->producer;
  if (prod && prod->is_view() && (prod->op == "Split" || prod->op == "Slice") && depth <= 16) {
    Placement p = placement(g, prod->input(0), depth + 1);
    const Shape src = prod->input(0)->type.static_shape(), me = v->type.static_shape();
    for (size_t d = 0; d < rank; ++d) {
      if (src[d] == me[d]) continue;
      int64_t start = 0;
      if (prod->op == "Split") {
        for (const Value* o : prod->outputs) {
          if (o == v) break;
          start += o->type.dims[d].value;
        }
      } else {
        const auto starts = prod->input(1)->known()->to_int64s();
        const auto axes = prod->input(3) ? prod->input(3)->known()->to_int64s()
                                         : std::vector<int64_t>{};
        for (size_t i = 0; i < starts.size(); ++i) {
          int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
          if (a < 0) a += static_cast<int64_t>(rank);
          if (a == static_cast<int64_t>(d)) start = starts[i] < 0 ? starts[i] + src[d] : starts[i];
        }
      }
      p.offset += start * p.strides[d];
    }
    return p;
  }
  return {dense_operand_strides(v), 0};
}

/// One group for the generic template, with its operands' pointer offsets.
struct GroupCase {
  std::string what;
  const Graph* graph = nullptr;
  int group = -1;  ///< FusedGroup::id
  GenericTask task;
  std::vector<int64_t> in_offset, out_offset;
};

inline bool conv_template_takes(const Graph& g, const FusedGroup& grp) {
  const auto tc = cuda_conv_task_from_group(g, grp, DType::kFloat16, DType::kFloat16);
  const auto simt = cuda_conv_task_from_group(g, grp, DType::kFloat32, DType::kFloat32);
  return (tc && TensorCoreConvTemplate::matches(*tc)) || (simt && SimtConvTemplate::matches(*simt));
}

/// The kernel groups of g that neither conv template takes (and, when `kind_only` is set, of
/// that kind), with operands stored as dtype.
inline std::vector<GroupCase> generic_cases(const Graph& g, DType dtype, const std::string& what,
                                            std::optional<GroupKind> kind_only = std::nullopt) {
  std::vector<GroupCase> cases;
  for (const FusedGroup& grp : g.groups) {
    if (!grp.is_kernel() || conv_template_takes(g, grp)) continue;
    if (kind_only && grp.kind != *kind_only) continue;
    GroupCase c;
    c.what = fmt::format("{} group {} '{}' {}", what, grp.id, grp.name, short_dtype_name(dtype));
    c.graph = &g;
    c.group = grp.id;
    std::string why;
    const auto t = generic_task_from_group(
        g, grp, [&](const Value* v) { return CudaOperand{v, dtype, placement(g, v).strides}; },
        &why);
    EXPECT_TRUE(t.has_value()) << c.what << ": " << why;
    if (!t) continue;
    c.task = *t;
    for (const CudaOperand& o : t->inputs) c.in_offset.push_back(placement(g, o.value).offset);
    for (const CudaOperand& o : t->outputs) c.out_offset.push_back(placement(g, o.value).offset);
    cases.push_back(std::move(c));
  }
  return cases;
}

/// The group alone as a graph: its activation inputs as graph inputs, its outputs as outputs.
inline std::unique_ptr<Graph> group_graph(const GenericTask& t) {
  auto sub = std::make_unique<Graph>();
  std::map<const Value*, Value*> map;
  for (const CudaOperand& o : t.inputs) {
    Value* v = sub->add_value(o.value->name, o.value->type);
    sub->inputs.push_back(v);
    map[o.value] = v;
  }
  for (const Node* n : t.nodes) {
    std::vector<Value*> ins;
    for (const Value* in : n->inputs) {
      if (!in) {
        ins.push_back(nullptr);
      } else if (!map.count(in)) {
        YOLOC_CHECK(in->known(), "group input {} is neither an operand nor known", in->name);
        ins.push_back(map[in] = sub->add_constant(in->name, *in->known()));
      } else {
        ins.push_back(map.at(in));
      }
    }
    Node* m = sub->add_node(n->op, ins, n->outputs.size(), n->attrs, n->name);
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      m->outputs[i]->type = n->outputs[i]->type;
      map[n->outputs[i]] = m->outputs[i];
    }
  }
  for (const CudaOperand& o : t.outputs) sub->outputs.push_back(map.at(o.value));
  return sub;
}

inline constexpr uint8_t kFill = 0x5a;

/// Element offsets of a shape's elements (row-major order) under strides.
inline std::vector<int64_t> strided_offsets(const Shape& s, const std::vector<int64_t>& st) {
  std::vector<int64_t> out(static_cast<size_t>(shape_numel(s)));
  std::vector<int64_t> idx(s.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d) o += idx[d] * st[d];
    out[i] = o;
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

/// Bytes of an operand's buffer: up to its last element.
inline size_t buffer_bytes(const CudaOperand& o, int64_t offset) {
  int64_t end = offset + 1;
  const Shape s = o.value->type.static_shape();
  for (size_t d = 0; d < s.size(); ++d) end += (s[d] - 1) * o.strides[d];
  return static_cast<size_t>(end) * dtype_size(o.dtype);
}

inline float load_as_float(const uint8_t* p, DType t) {
  if (t == DType::kFloat32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  if (t == DType::kFloat16) return static_cast<float>(Half::from_bits(bits));
  BFloat16 b;
  b.bits = bits;
  return static_cast<float>(b);
}

/// The host side of one case: operand buffers, constants, and the reference outputs.
struct CaseData {
  std::vector<std::vector<uint8_t>> inputs, outputs;  ///< outputs hold kFill bytes
  std::vector<Tensor> constants;                      ///< dense float32
  std::vector<Tensor> want;                           ///< float32, logical shapes
};

/// Random inputs (rounded to the operand dtype) placed in their buffers, and the reference
/// outputs of the group on them. A group with a TopK gets inputs on the float16 grid: what it
/// selects must not hang on the last-ulp rounding of the ops before it (a kernel's sigmoid one
/// ulp off the reference's swaps two scores that close), and equal inputs make exact ties.
/// `values`, when given, are the inputs instead (logical shapes, any float dtype).
inline CaseData make_data(const GroupCase& c, uint32_t seed,
                          const std::vector<Tensor>* values = nullptr) {
  CaseData d;
  const bool selects = std::any_of(c.task.nodes.begin(), c.task.nodes.end(),
                                   [](const Node* n) { return n->op == "TopK"; });
  std::map<std::string, Tensor> feeds;
  std::map<const Value*, Tensor> stored_inputs;
  const auto sub = group_graph(c.task);
  for (size_t k = 0; k < c.task.inputs.size(); ++k) {
    const CudaOperand& o = c.task.inputs[k];
    const Shape s = o.value->type.static_shape();
    const Tensor stored =
        (values ? values->at(k)
                : yoloc::testing::random_tensor(s, seed + static_cast<uint32_t>(k), -2.f, 2.f))
            .cast(selects ? DType::kFloat16 : o.dtype)
            .cast(o.dtype);
    feeds[sub->inputs[k]->name] = stored.cast(o.value->type.dtype);
    stored_inputs[o.value] = stored;
    std::vector<uint8_t> buf(buffer_bytes(o, c.in_offset[k]), 0x7f);
    const size_t es = dtype_size(o.dtype);
    const auto offs = strided_offsets(s, o.strides);
    const auto* src = static_cast<const uint8_t*>(stored.raw());
    for (size_t i = 0; i < offs.size(); ++i) {
      std::memcpy(&buf[static_cast<size_t>(c.in_offset[k] + offs[i]) * es], src + i * es, es);
    }
    d.inputs.push_back(std::move(buf));
  }
  for (const Value* v : c.task.constants) d.constants.push_back(v->data.cast(DType::kFloat32));
  for (size_t k = 0; k < c.task.outputs.size(); ++k) {
    const CudaOperand& o = c.task.outputs[k];
    std::vector<uint8_t> buf(buffer_bytes(o, c.out_offset[k]), kFill);
    // An output that is a view Concat holds the inputs from outside the group already (their
    // producers wrote them into its buffer).
    const Node* p = o.value->producer;
    if (p && p->op == "Concat" && p->is_view()) {
      const size_t es = dtype_size(o.dtype);
      int64_t axis = p->attrs.get_int("axis", 0);
      if (axis < 0) axis += static_cast<int64_t>(o.strides.size());
      int64_t first = 0;
      for (const Value* x : p->inputs) {
        if (stored_inputs.count(x)) {
          const auto offs = strided_offsets(x->type.static_shape(), o.strides);
          const auto* src = static_cast<const uint8_t*>(stored_inputs.at(x).raw());
          for (size_t i = 0; i < offs.size(); ++i) {
            const int64_t at = c.out_offset[k] + first * o.strides[static_cast<size_t>(axis)] +
                               offs[i];
            std::memcpy(&buf[static_cast<size_t>(at) * es], src + i * es, es);
          }
        }
        first += x->type.dims[static_cast<size_t>(axis)].value;
      }
    }
    d.outputs.push_back(std::move(buf));
  }
  for (const NamedTensor& t : run_reference(*sub, feeds)) {
    d.want.push_back(t.tensor.cast(DType::kFloat32));
  }
  return d;
}

/// Allowed |got - want| / scale: fp32 differs by evaluation order and per-op rounding only; a
/// 16-bit output carries its rounding.
inline double tolerance(DType t) {
  return t == DType::kFloat32 ? 1e-5 : t == DType::kFloat16 ? 1e-3 : 8e-3;
}

/// Compares output buffers with the reference (`exact`: bit for bit, as a max must be; else
/// within tolerance(); equal values, infinities too, always match), and checks the bytes no
/// element of the outputs lies on still hold kFill.
inline ::testing::AssertionResult check_outputs(const GroupCase& c, const CaseData& d,
                                                const std::vector<std::vector<uint8_t>>& got,
                                                bool exact = false) {
  for (size_t k = 0; k < c.task.outputs.size(); ++k) {
    const CudaOperand& o = c.task.outputs[k];
    const size_t es = dtype_size(o.dtype);
    const auto offs = strided_offsets(o.value->type.static_shape(), o.strides);
    const float* want = d.want[k].data<float>();
    // The scale of an element: itself, at least 1, and at least 5% of the output's largest value
    // (the box decode subtracts values ~100x its small results: their rounding is what shows; its
    // terms, a distance times the stride, run to a fifth of the largest box value, and the fused
    // DFL's sum differs from the reference's softmax by a few of their ulps).
    double largest = 0;
    for (int64_t i = 0; i < d.want[k].numel(); ++i) {
      largest = std::max(largest, std::fabs(static_cast<double>(want[i])));
    }
    std::vector<bool> mine(got[k].size() / es, false);
    int bad = 0;
    double worst = 0;
    std::string first;
    for (size_t i = 0; i < offs.size(); ++i) {
      const auto at = static_cast<size_t>(c.out_offset[k] + offs[i]);
      mine[at] = true;
      const float g = load_as_float(&got[k][at * es], o.dtype);
      const double err =
          g == want[i] ? 0.0
          : exact      ? std::numeric_limits<double>::infinity()
                       : std::fabs(static_cast<double>(g) - want[i]) /
                        std::max({1.0, std::fabs(static_cast<double>(want[i])), 0.05 * largest});
      if (!(err <= tolerance(o.dtype))) {
        if (bad++ == 0) first = fmt::format("element {}: got {}, want {}", i, g, want[i]);
      } else {
        worst = std::max(worst, err);
      }
    }
    for (size_t e = 0; e < mine.size(); ++e) {
      if (mine[e]) continue;
      for (size_t b = 0; b < es; ++b) {
        if (got[k][e * es + b] != kFill && bad++ == 0) {
          first = fmt::format("element at {} outside the output was written", e);
        }
      }
    }
    if (bad > 0) {
      return ::testing::AssertionFailure() << "output " << o.value->name << ": " << bad
                                           << " bad elements; first: " << first;
    }
  }
  return ::testing::AssertionSuccess();
}

// --- graphs -------------------------------------------------------------------------------------

inline Attrs axis_attr(int64_t axis) {
  Attrs a;
  a.set("axis", axis);
  return a;
}

inline Value* shape_const(Graph& g, std::vector<int64_t> s) {
  const auto n = static_cast<int64_t>(s.size());
  return g.add_constant("shape", Tensor::from_vector<int64_t>({n}, std::move(s)));
}

/// Conv (template) -> depthwise 3x3 (stride `stride`) + bias + SiLU -> grouped 3x3 conv (4
/// groups) -> 1x1 conv (template).
inline std::unique_ptr<Graph> depthwise_graph(int64_t n, int64_t c, int64_t h, int64_t w,
                                              int64_t stride) {
  auto g = std::make_unique<Graph>();
  Value* x = conv(*g, input(*g, "x", {n, 8, h, w}), 8, c, 1, 1);
  Attrs dw = yoloc::testing::conv_attrs(3, 1, c);
  dw.set("strides", std::vector<int64_t>{stride, stride});
  Value* y = node(*g, "SiLU",
                  {node(*g, "Conv",
                        {x, g->add_constant("wd", yoloc::testing::random_tensor({c, 1, 3, 3}, 3)),
                         g->add_constant("bd", yoloc::testing::random_tensor({c}, 4))},
                        dw)});
  Value* z = node(*g, "Conv",
                  {y, g->add_constant("wg", yoloc::testing::random_tensor({c, c / 4, 3, 3}, 5))},
                  yoloc::testing::conv_attrs(3, 1, 4));
  g->outputs = {conv(*g, z, c, 8, 1, 7)};
  return g;
}

/// SPPF: conv -> three chained 5x5 max pools -> concat of the four -> conv.
inline std::unique_ptr<Graph> sppf_graph(int64_t n, int64_t c, int64_t h, int64_t w) {
  auto g = std::make_unique<Graph>();
  Value* x = conv(*g, input(*g, "x", {n, 8, h, w}), 8, c, 1, 1);
  Attrs mp;
  mp.set("kernel_shape", std::vector<int64_t>{5, 5});
  mp.set("pads", std::vector<int64_t>{2, 2, 2, 2});
  mp.set("strides", std::vector<int64_t>{1, 1});
  Value* m1 = node(*g, "MaxPool", {x}, mp);
  Value* m2 = node(*g, "MaxPool", {m1}, mp);
  Value* m3 = node(*g, "MaxPool", {m2}, mp);
  g->outputs = {conv(*g, node(*g, "Concat", {x, m1, m2, m3}, axis_attr(1)), 4 * c, 8, 1, 3)};
  return g;
}

/// Nearest 2x upsampling of a conv output written into a concat with a conv output, then a conv.
inline std::unique_ptr<Graph> resize_concat_graph(int64_t n, int64_t c, int64_t h, int64_t w) {
  auto g = std::make_unique<Graph>();
  Value* a = conv(*g, input(*g, "a", {n, 8, h, w}), 8, c, 1, 1);
  Value* b = conv(*g, input(*g, "b", {n, 8, 2 * h, 2 * w}), 8, 16, 1, 3);
  Value* scales = g->add_constant("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}));
  Attrs r;
  r.set("mode", std::string("nearest"));
  r.set("coordinate_transformation_mode", std::string("asymmetric"));
  r.set("nearest_mode", std::string("floor"));
  Value* up = node(*g, "Resize", {a, nullptr, scales}, r);
  g->outputs = {conv(*g, node(*g, "Concat", {up, b}, axis_attr(1)), c + 16, 8, 1, 5)};
  return g;
}

/// YOLO11's attention: qkv conv, heads split, softmax(q^T k * scale), v attn^T, residual.
inline std::unique_ptr<Graph> attention_graph(int64_t c, int64_t h, int64_t w) {
  auto g = std::make_unique<Graph>();
  const int64_t heads = 2, kd = c / 4, hd = c / heads, p = h * w;
  Value* x = conv(*g, input(*g, "x", {1, 8, h, w}), 8, c, 1, 1);
  Value* qkv = conv(*g, x, c, heads * (2 * kd + hd), 1, 3);
  Value* r = node(*g, "Reshape", {qkv, shape_const(*g, {1, heads, 2 * kd + hd, p})});
  Node* s = g->add_node("Split", {r, g->add_constant("split", Tensor::from_vector<int64_t>(
                                                                  {3}, {kd, kd, hd}))},
                        3, axis_attr(2));
  infer_node(*s);
  Attrs t;
  t.set("perm", std::vector<int64_t>{0, 1, 3, 2});
  Value* qt = node(*g, "Transpose", {s->outputs[0]}, t);
  Value* att = node(*g, "MatMul", {qt, s->outputs[1]});
  att = node(*g, "Mul", {att, g->add_constant("scale", Tensor::from_vector<float>({}, {0.35f}))});
  att = node(*g, "Softmax", {att}, axis_attr(-1));
  Value* o = node(*g, "MatMul", {s->outputs[2], node(*g, "Transpose", {att}, t)});
  o = node(*g, "Reshape", {o, shape_const(*g, {1, c, h, w})});
  o = node(*g, "Add", {o, x});
  g->outputs = {conv(*g, o, c, 8, 1, 7)};
  return g;
}

/// The anchor points (cell centres, in cells) and strides of the levels s = 8, 16, 32 of a
/// `size` x `size` image, in the order the exports concatenate the levels.
struct AnchorGrid {
  std::vector<float> x, y, strides;
  int64_t count() const { return static_cast<int64_t>(strides.size()); }
};

inline AnchorGrid anchor_grid(int64_t size) {
  AnchorGrid grid;
  for (int64_t s : {8, 16, 32}) {
    const int64_t hw = size / s;
    for (int64_t i = 0; i < hw; ++i)
      for (int64_t j = 0; j < hw; ++j) {
        grid.x.push_back(static_cast<float>(j) + 0.5f);
        grid.y.push_back(static_cast<float>(i) + 0.5f);
        grid.strides.push_back(static_cast<float>(s));
      }
  }
  return grid;
}

/// The box corners x1y1 and x2y2 ([n, 2, anchors] each) of `box`, the DFL distances [n, 4,
/// anchors] (left, top, right, bottom) around the grid's anchor points, as the exports compute
/// them: anchors - lt and anchors + rb.
inline std::pair<Value*, Value*> dfl_corners(Graph& g, Value* box, const AnchorGrid& grid) {
  const auto slice = [&](Value* v, int64_t s0, int64_t s1) {
    return node(g, "Slice", {v, shape_const(g, {s0}), shape_const(g, {s1}), shape_const(g, {1})});
  };
  Value* lt = slice(box, 0, 2);
  Value* rb = slice(box, 2, 4);
  std::vector<float> anchors = grid.x;
  anchors.insert(anchors.end(), grid.y.begin(), grid.y.end());
  Value* anc = g.add_constant("anchors", Tensor::from_vector<float>({1, 2, grid.count()}, anchors));
  return {node(g, "Sub", {anc, lt}), node(g, "Add", {anc, rb})};
}

/// The yolov8 detect head's tail on `size` x `size` images with `nc` classes: three head outputs
/// (64 DFL + nc channels at strides 8, 16, 32), the DFL softmax and 1x1 conv, the box decode and
/// the sigmoid of the scores, as the Ultralytics export writes it: [1, 4 + nc, anchors].
inline Value* yolov8_tail(Graph& graph, int64_t size, int64_t nc) {
  Graph* g = &graph;
  const int64_t no = 64 + nc;
  std::vector<Value*> heads;
  for (int64_t s : {8, 16, 32}) {
    const int64_t hw = size / s;
    Value* x = input(*g, fmt::format("p{}", s), {1, 8, hw, hw});
    Value* y = conv(*g, x, 8, no, 1, static_cast<uint32_t>(s));
    heads.push_back(node(*g, "Reshape", {y, shape_const(*g, {1, no, -1})}));
  }
  const AnchorGrid grid = anchor_grid(size);
  const int64_t a = grid.count();
  Value* cat = node(*g, "Concat", heads, axis_attr(2));
  Node* split = g->add_node(
      "Split", {cat, g->add_constant("split", Tensor::from_vector<int64_t>({2}, {64, nc}))}, 2,
      axis_attr(1));
  infer_node(*split);
  Value* box = node(*g, "Reshape", {split->outputs[0], shape_const(*g, {1, 4, 16, a})});
  Attrs t;
  t.set("perm", std::vector<int64_t>{0, 2, 1, 3});
  box = node(*g, "Softmax", {node(*g, "Transpose", {box}, t)}, axis_attr(1));
  std::vector<float> bins(16);
  std::iota(bins.begin(), bins.end(), 0.f);
  Value* dfl = g->add_constant("dfl", Tensor::from_vector<float>({1, 16, 1, 1}, bins));
  box = node(*g, "Conv", {box, dfl}, yoloc::testing::conv_attrs(1, 0));
  box = node(*g, "Reshape", {box, shape_const(*g, {1, 4, a})});
  const auto [x1y1, x2y2] = dfl_corners(*g, box, grid);
  Value* c_xy = node(*g, "Div", {node(*g, "Add", {x1y1, x2y2}),
                                 g->add_constant("two", Tensor::from_vector<float>({}, {2.f}))});
  Value* wh = node(*g, "Sub", {x2y2, x1y1});
  Value* st = g->add_constant("strides", Tensor::from_vector<float>({1, a}, grid.strides));
  Value* dbox = node(*g, "Mul", {node(*g, "Concat", {c_xy, wh}, axis_attr(1)), st});
  return node(*g, "Concat", {dbox, node(*g, "Sigmoid", {split->outputs[1]})}, axis_attr(1));
}

inline std::unique_ptr<Graph> yolov8_tail_graph(int64_t size, int64_t nc) {
  auto g = std::make_unique<Graph>();
  g->outputs = {yolov8_tail(*g, size, nc)};
  return g;
}

inline Value* int64_const(Graph& g, std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return g.add_constant("ints", Tensor::from_vector<int64_t>({n}, std::move(v)));
}

inline Value* int64_scalar(Graph& g, int64_t v) {
  return g.add_constant("int", Tensor::from_vector<int64_t>({}, {v}));
}

/// Both outputs of a TopK of x along the last axis.
inline std::pair<Value*, Value*> topk(Graph& g, Value* x, int64_t k, bool largest = true) {
  Attrs a = axis_attr(-1);
  a.set("largest", int64_t{largest ? 1 : 0});
  a.set("sorted", int64_t{1});
  Node* n = g.add_node("TopK", {x, int64_const(g, {k})}, 2, a);
  infer_node(*n);
  return {n->outputs[0], n->outputs[1]};
}

inline Value* reduce_max(Graph& g, Value* x, std::vector<int64_t> axes, bool keep) {
  Attrs a;
  a.set("keepdims", int64_t{keep ? 1 : 0});
  return node(g, "ReduceMax", {x, int64_const(g, std::move(axes))}, a);
}

inline Value* to_float(Graph& g, Value* x) {
  Attrs to;
  to.set("to", std::string("float32"));
  return node(g, "Cast", {x}, to);
}

/// The YOLOv10 end-to-end head: the yolov8 tail (`size`, `nc`), then its one-to-one selection
/// as the Ultralytics export writes it: the k anchors of the best class scores (ReduceMax,
/// TopK), their k x nc scores (Tile, GatherElements), the best k of those (TopK), their anchor
/// (Div, Gather) and class (Mod, Cast), and the boxes (GatherElements): [1, k, 6].
inline std::unique_ptr<Graph> yolov10_tail_graph(int64_t size, int64_t nc, int64_t k) {
  auto g = std::make_unique<Graph>();
  Attrs t;
  t.set("perm", std::vector<int64_t>{0, 2, 1});
  Value* x = node(*g, "Transpose", {yolov8_tail(*g, size, nc)}, t);
  Node* split = g->add_node("Split", {x, int64_const(*g, {4, nc})}, 2, axis_attr(-1));
  infer_node(*split);
  Value *boxes = split->outputs[0], *scores = split->outputs[1];
  Value* anchor = topk(*g, reduce_max(*g, scores, {-1}, false), k).second;
  Value* anchor1 = node(*g, "Unsqueeze", {anchor, int64_const(*g, {-1})});
  Value* anchor_col = node(*g, "Flatten", {anchor1}, axis_attr(2));
  Value* tiled = node(*g, "Tile", {anchor1, int64_const(*g, {1, 1, nc})});
  Value* cand = node(*g, "GatherElements", {scores, tiled}, axis_attr(1));
  const auto [score, flat] = topk(*g, node(*g, "Flatten", {cand}, axis_attr(1)), k);
  Value* div = node(*g, "Div", {flat, int64_scalar(*g, nc)});
  Value* cls = node(*g, "Mod", {flat, int64_scalar(*g, nc)});
  Value* which = node(*g, "Gather", {anchor_col, div}, axis_attr(0));
  Value* box_idx = node(*g, "Tile", {which, int64_const(*g, {1, 1, 4})});
  Value* cls_f = to_float(*g, node(*g, "Unsqueeze", {cls, int64_const(*g, {-1})}));
  g->outputs = {node(*g, "Concat",
                     {node(*g, "GatherElements", {boxes, box_idx}, axis_attr(1)),
                      node(*g, "Unsqueeze", {score, int64_const(*g, {-1})}), cls_f},
                     axis_attr(-1))};
  return g;
}

/// What select_graph feeds its selection with.
enum class SelectInput {
  kPlain,  ///< the conv output
  kTies,   ///< Clip(x, 0, 0.5): many equal values
  kNaN,    ///< Sqrt(x): NaN where x < 0
};

/// conv [1, c, h, w] -> f (SelectInput) -> [1, c, h*w] -> ReduceMax over c -> TopK k (largest or
/// smallest) -> the selected positions' (h, w) by int64 Div / Mod, cast, their values (not for
/// kNaN: NaN compares unequal), the conv output at them by GatherElements (Tile of the indices)
/// and by Gather; all concatenated to [1, 3 + 2c (2 + 2c for kNaN), k].
inline std::unique_ptr<Graph> select_graph(int64_t c, int64_t h, int64_t w, int64_t k,
                                           SelectInput f, bool largest = true) {
  auto g = std::make_unique<Graph>();
  Value* x = conv(*g, input(*g, "x", {1, 8, h, w}), 8, c, 1, 1);
  x = node(*g, "Reshape", {x, shape_const(*g, {1, c, h * w})});
  Value* keyed = x;
  if (f == SelectInput::kTies) {
    keyed = node(*g, "Clip", {x, g->add_constant("lo", Tensor::from_vector<float>({}, {0.f})),
                              g->add_constant("hi", Tensor::from_vector<float>({}, {0.5f}))});
  } else if (f == SelectInput::kNaN) {
    keyed = node(*g, "Sqrt", {x});
  }
  const auto [vals, idx] = topk(*g, reduce_max(*g, keyed, {1}, false), k, largest);
  const auto unsq = [&](Value* v) { return node(*g, "Unsqueeze", {v, int64_const(*g, {1})}); };
  std::vector<Value*> parts = {unsq(to_float(*g, node(*g, "Div", {idx, int64_scalar(*g, w)}))),
                               unsq(to_float(*g, node(*g, "Mod", {idx, int64_scalar(*g, w)})))};
  if (f != SelectInput::kNaN) parts.push_back(unsq(vals));
  Value* tiled = node(*g, "Tile", {unsq(idx), int64_const(*g, {1, c, 1})});
  parts.push_back(node(*g, "GatherElements", {x, tiled}, axis_attr(2)));
  parts.push_back(node(*g, "Reshape", {node(*g, "Gather", {x, idx}, axis_attr(2)),
                                       shape_const(*g, {1, c, k})}));
  g->outputs = {node(*g, "Concat", parts, axis_attr(1))};
  return g;
}

/// g optimized for the CUDA target (fp32 numerics).
inline std::unique_ptr<Graph> optimized(std::unique_ptr<Graph> g) {
  PassContext ctx;
  ctx.target = yoloc::targets::cuda_attributes();
  ctx.precision = Precision::kFp32;
  optimize(*g, ctx);
  return g;
}

}  // namespace yoloc::codegen::cuda::testing
