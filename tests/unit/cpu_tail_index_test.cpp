// The tail template on index ops and int64 values (TopK, Gather, GatherElements, Tile,
// ReduceMax/Min, ArgMax/Min, int64 Div/Mod/arithmetic, Casts between int64 and float): small
// graphs made one group each, their kernels built into one shared object and run, every output
// compared with the reference executor running the same graph (exactly for int64 outputs and
// for the values TopK and the gathers copy).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "codegen/cpu/host_compiler.h"
#include "runtime/kernel_library.h"
#include "runtime/thread_pool.h"
#include "codegen/cpu/tail_template.h"
#include "graph_builder.h"

namespace yoloc::codegen::cpu {
namespace {

using testing::input;
using testing::random_tensor;

Value* int_input(Graph& g, const std::string& name, Shape shape) {
  Value* v = g.add_value(name, TensorType(DType::kInt64, std::vector<Dim>(shape.begin(),
                                                                            shape.end())));
  g.inputs.push_back(v);
  return v;
}

Value* ints(Graph& g, const std::string& name, std::vector<int64_t> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t(DType::kInt64, shape);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return g.add_constant(name, t);
}

// A node of n_out outputs, type-inferred at once.
std::vector<Value*> op(Graph& g, const std::string& type, std::vector<Value*> ins,
                       Attrs attrs = {}, size_t n_out = 1) {
  Node* n = g.add_node(type, std::move(ins), n_out, std::move(attrs));
  infer_node(*n);
  return n->outputs;
}
Value* op1(Graph& g, const std::string& type, std::vector<Value*> ins, Attrs attrs = {}) {
  return op(g, type, std::move(ins), std::move(attrs))[0];
}

Attrs attrs(std::initializer_list<std::pair<const char*, int64_t>> kv) {
  Attrs a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Float values on a coarse grid (many ties), with NaN and infinities where asked.
Tensor tied(Shape shape, uint32_t seed, bool specials) {
  Tensor t = random_tensor(std::move(shape), seed, -3.f, 3.f);
  float* d = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    d[i] = std::round(d[i] * 2.f) / 2.f;
    if (specials && i % 11 == 3) d[i] = NAN;
    if (specials && i % 13 == 5) d[i] = i % 2 ? INFINITY : -INFINITY;
  }
  return t;
}

Tensor int_tensor(Shape shape, uint32_t seed, int64_t lo, int64_t hi) {
  const Tensor r = random_tensor(shape, seed, 0.f, 1.f);
  Tensor t(DType::kInt64, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<int64_t>()[i] = lo + static_cast<int64_t>(r.data<float>()[i] * static_cast<float>(hi - lo));
  }
  return t;
}

// Puts every node of g in one group, emits the tail kernel (two configs), runs it the way the
// compiler does (once per image for a per-image task) and compares with the reference run.
void check_graph(Graph& g, const std::map<std::string, Tensor>& feeds, int64_t want_images = 1) {
  FusedGroup grp;
  grp.id = 0;
  grp.kind = GroupKind::kDetectTail;
  grp.name = "index tail";
  g.groups = {grp};
  for (Node* n : g.nodes()) n->group = 0;
  const auto t = tail_task_from_group(g, g.groups[0]);
  ASSERT_TRUE(t) << "the tail template does not take the graph";
  EXPECT_EQ(t->images, want_images);
  const std::vector<ScheduleConfig> cfgs = {TailTemplate::default_config(*t),
                                            ScheduleConfig({{"unroll", 1}})};
  std::string source;
  for (size_t c = 0; c < cfgs.size(); ++c)
    source += TailTemplate::emit(*t, cfgs[c], fmt::format("k{}", c)).source;
  const SharedObject so = compile_shared_object(source);
  runtime::KernelLibrary lib(so.bytes);
  const auto want = run_reference(g, feeds);
  ASSERT_EQ(want.size(), t->io.outputs.size());
  runtime::ThreadPool pool(2);
  for (size_t c = 0; c < cfgs.size(); ++c) {
    SCOPED_TRACE(cfgs[c].str());
    const CpuKernel k = TailTemplate::emit(*t, cfgs[c], "k" + std::to_string(c));
    std::vector<Tensor> outs;
    for (const Value* v : t->io.outputs) {
      outs.emplace_back(v->type.dtype, v->type.static_shape());
      std::memset(outs.back().raw(), 0xff, outs.back().numel() * dtype_size(v->type.dtype));
    }
    using Fn = void (*)(const float* const*, float* const*, int64_t, int64_t);
    const auto fn = reinterpret_cast<Fn>(lib.symbol(k.symbol));
    for (int64_t image = 0; image < t->images; ++image) {
      // A per-image kernel sees one image of every activation (constants whole).
      const auto at = [&](const void* base, const Value* v) {
        const size_t bytes = static_cast<size_t>(shape_numel(v->type.static_shape())) *
                             dtype_size(v->type.dtype) / static_cast<size_t>(t->images);
        return static_cast<const char*>(base) + (v->is_constant() ? 0 : bytes * image);
      };
      std::vector<const float*> in;
      for (const Value* v : t->args) {
        const void* base = v->is_constant() ? v->data.raw() : feeds.at(v->name).raw();
        in.push_back(reinterpret_cast<const float*>(at(base, v)));
      }
      std::vector<float*> out;
      for (size_t i = 0; i < outs.size(); ++i) {
        out.push_back(reinterpret_cast<float*>(
            const_cast<char*>(at(outs[i].raw(), t->io.outputs[i]))));
      }
      pool.parallel_for(k.work_items,
                        [&](int64_t b, int64_t e) { fn(in.data(), out.data(), b, e); });
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      // The kernel's outputs come in graph order, the reference's in g.outputs order.
      const auto pos = std::find(g.outputs.begin(), g.outputs.end(), t->io.outputs[i]);
      ASSERT_NE(pos, g.outputs.end());
      const NamedTensor& ref_out = want[static_cast<size_t>(pos - g.outputs.begin())];
      const Tensor& w = ref_out.tensor;
      ASSERT_EQ(outs[i].dtype(), w.dtype()) << ref_out.name;
      ASSERT_EQ(outs[i].shape(), w.shape()) << ref_out.name;
      const auto got = outs[i].to_doubles(), ref = w.to_doubles();
      int bad = 0;
      for (size_t e = 0; e < ref.size(); ++e) {
        const bool same = got[e] == ref[e] || (std::isnan(got[e]) && std::isnan(ref[e])) ||
                          std::fabs(got[e] - ref[e]) <= 1e-5 * std::max(1.0, std::fabs(ref[e]));
        if (!same && bad++ < 5) {
          ADD_FAILURE() << ref_out.name << " element " << e << ": got " << got[e] << ", want "
                        << ref[e];
        }
      }
      EXPECT_EQ(bad, 0) << ref_out.name;
    }
  }
}

TEST(CpuTailIndex, TopKTiesNanAndAxes) {
  Graph g;
  Value* x = input(g, "x", {3, 40});
  Value* y = input(g, "y", {3, 9, 4});
  const auto a = op(g, "TopK", {x, ints(g, "k12", {12})}, attrs({{"axis", -1}}), 2);
  const auto b = op(g, "TopK", {y, ints(g, "k5", {5})}, attrs({{"axis", 1}, {"largest", 0}}), 2);
  // K = the whole axis: a full sort.
  const auto c = op(g, "TopK", {x, ints(g, "k40", {40})}, attrs({{"axis", 1}, {"largest", 0}}), 2);
  g.outputs = {a[0], a[1], b[0], b[1], c[0], c[1]};
  // Every activation has the batch first and nothing works along it: run per image.
  check_graph(g, {{"x", tied({3, 40}, 1, true)}, {"y", tied({3, 9, 4}, 2, false)}}, 3);
}

// The end-to-end head of YOLOv10 in small: best class per anchor, top anchors, their class
// scores gathered, top (anchor, class) pairs, anchor and class recovered by int64 Div / Mod,
// the anchor index gathered back, everything concatenated as floats.
TEST(CpuTailIndex, EndToEndHead) {
  Graph g;
  const int64_t anchors = 50, classes = 7, k = 10;
  Value* boxes = input(g, "boxes", {1, anchors, 4});
  Value* scores = input(g, "scores", {1, anchors, classes});
  Attrs no_keep = attrs({{"keepdims", 0}});
  Value* best = op1(g, "ReduceMax", {scores, ints(g, "ax", {-1})}, no_keep);
  const auto top = op(g, "TopK", {best, ints(g, "k", {k})}, attrs({{"axis", -1}}), 2);
  Value* idx = op1(g, "Unsqueeze", {top[1], ints(g, "m1", {-1})});
  Value* picked = op1(g, "GatherElements",
                      {scores, op1(g, "Tile", {idx, ints(g, "rep", {1, 1, classes})})},
                      attrs({{"axis", 1}}));
  const auto top2 = op(g, "TopK", {op1(g, "Flatten", {picked}, attrs({{"axis", 1}})),
                                   ints(g, "k2", {k})}, attrs({{"axis", -1}}), 2);
  Value* nc = ints(g, "nc", {classes}, Shape{});
  Value* anchor = op1(g, "Div", {top2[1], nc});
  Value* cls = op1(g, "Mod", {top2[1], nc});
  Value* which = op1(g, "Gather", {op1(g, "Flatten", {idx}, attrs({{"axis", 2}})), anchor},
                     attrs({{"axis", 0}}));
  Value* box = op1(g, "GatherElements",
                   {boxes, op1(g, "Tile", {which, ints(g, "rep4", {1, 1, 4})})},
                   attrs({{"axis", 1}}));
  Attrs to_float;
  to_float.set("to", std::string("float32"));
  Value* cls_f = op1(g, "Cast", {op1(g, "Unsqueeze", {cls, ints(g, "m2", {-1})})}, to_float);
  Value* score = op1(g, "Unsqueeze", {top2[0], ints(g, "m3", {-1})});
  Value* out = op1(g, "Concat", {box, score, cls_f}, attrs({{"axis", -1}}));
  g.outputs = {out, top[1], which};
  check_graph(g, {{"boxes", random_tensor({1, anchors, 4}, 3, 0.f, 640.f)},
                  {"scores", tied({1, anchors, classes}, 4, true)}});
}

// int64 arithmetic with negative operands (truncating Div, Mod with the divisor's sign), Casts
// both ways (float -> int64 truncates), Gather with negative indices, and reductions.
TEST(CpuTailIndex, Int64ArithmeticGatherAndReductions) {
  Graph g;
  Value* a = int_input(g, "a", {1, 6, 8});
  Value* f = input(g, "f", {1, 6, 8});
  Value* d = ints(g, "d", {3, -3, 5, -7, 1, 2, -1, 4}, {8});
  Attrs to_i, to_f;
  to_i.set("to", std::string("int64"));
  to_f.set("to", std::string("float32"));
  Value* fi = op1(g, "Cast", {f}, to_i);
  Value* q = op1(g, "Div", {op1(g, "Add", {a, fi}), d});
  Value* r = op1(g, "Mod", {op1(g, "Mul", {a, fi}), d});
  Value* s = op1(g, "Sub", {op1(g, "Max", {q, r}), op1(g, "Neg", {op1(g, "Abs", {a})})});
  Value* back = op1(g, "Cast", {op1(g, "Min", {s, q})}, to_f);
  Value* gathered = op1(g, "Gather", {f, ints(g, "gi", {-1, 0, 3, -6, 2})}, attrs({{"axis", 1}}));
  Value* rmax = op1(g, "ReduceMax", {f, ints(g, "ax1", {1})}, attrs({{"keepdims", 1}}));
  Value* rmin = op1(g, "ReduceMin", {a, ints(g, "ax2", {1, 2})}, attrs({{"keepdims", 0}}));
  Value* amax = op1(g, "ArgMax", {f}, attrs({{"axis", 2}, {"keepdims", 0}}));
  Value* amin_last =
      op1(g, "ArgMin", {a}, attrs({{"axis", -2}, {"keepdims", 1}, {"select_last_index", 1}}));
  g.outputs = {q, r, s, back, gathered, rmax, rmin, amax, amin_last};
  Tensor ft = random_tensor({1, 6, 8}, 5, -9.f, 9.f);
  ft.data<float>()[7] = ft.data<float>()[3];  // an ArgMax tie
  check_graph(g, {{"a", int_tensor({1, 6, 8}, 6, -20, 20)}, {"f", ft}});
}

}  // namespace
}  // namespace yoloc::codegen::cpu
