// A seeded random-graph fuzzer for the pattern matcher, the rewrites and the fusion pass: random
// YOLO-like graphs are optimized and must compute what they computed before, and every node must
// end up in exactly one fused group. Set YOLOC_FUZZ_SEED to replay one seed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "graph_builder.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"

using namespace yoloc;
using namespace yoloc::testing;

namespace {

/// Builds a random DAG over [1, C, 8, 8] tensors with C in {4, 8}.
std::unique_ptr<Graph> random_graph(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto g = std::make_unique<Graph>();
  std::vector<Value*> pool{input(*g, "x", {1, 4, 8, 8})};
  auto channels = [](const Value* v) { return v->type.dims[1].value; };
  Attrs axis1;
  axis1.set("axis", int64_t{1});
  const int steps = 6 + static_cast<int>(pick(14));
  for (int s = 0; s < steps; ++s) {
    Value* a = pool[pick(pool.size())];
    Value* out = nullptr;
    switch (pick(10)) {
      case 0: out = conv(*g, a, channels(a), 4 * (1 + static_cast<int64_t>(pick(2))), pick(2) ? 3 : 1, rng()); break;
      case 1: out = node(*g, "Mul", {a, node(*g, "Sigmoid", {a})}); break;  // SiLU pattern
      case 2: out = node(*g, "Sigmoid", {a}); break;
      case 3: {
        Value* b = pool[pick(pool.size())];
        if (channels(b) == channels(a)) out = node(*g, "Add", {a, b});
        break;
      }
      case 4: {
        Value* b = pool[pick(pool.size())];
        if (channels(a) + channels(b) <= 8) out = node(*g, "Concat", {a, b}, axis1);
        break;
      }
      case 5:
        if (channels(a) == 8) {
          Node* sp = g->add_node("Split", {a, g->add_constant("split", Tensor::from_vector<int64_t>({2}, {4, 4}))}, 2, axis1);
          infer_node(*sp);
          pool.push_back(sp->outputs[0]);
          out = sp->outputs[1];
        }
        break;
      case 6: {
        Attrs p;
        p.set("kernel_shape", std::vector<int64_t>{3, 3});
        p.set("pads", std::vector<int64_t>{1, 1, 1, 1});
        out = node(*g, "MaxPool", {a}, p);
        break;
      }
      case 7: {
        Tensor c = random_tensor({1, channels(a), 1, 1}, rng(), 0.5f, 1.5f);
        out = node(*g, pick(2) ? "Mul" : "Add", {a, g->add_constant("c", c)});
        break;
      }
      case 8: out = node(*g, "Div", {a, g->add_constant("d", Tensor::scalar<float>(2.0f))}); break;
      default: out = node(*g, "Relu", {a}); break;
    }
    if (out) pool.push_back(out);
  }
  // Outputs: the last value and one random earlier one (so some values have outside users).
  g->outputs.push_back(pool.back());
  if (pool.size() > 2) {
    Value* extra = pool[1 + pick(pool.size() - 2)];
    if (extra != pool.back() && extra->producer) g->outputs.push_back(extra);
  }
  g->remove_dead();
  return g;
}

}  // namespace

TEST(PassFuzz, OptimizedGraphsComputeTheSameAndArePartitioned) {
  const char* env = std::getenv("YOLOC_FUZZ_SEED");
  const uint32_t first = env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 1000;
  const uint32_t count = env ? 1 : 60;
  for (uint32_t seed = first; seed < first + count; ++seed) {
    SCOPED_TRACE(::testing::Message() << "YOLOC_FUZZ_SEED=" << seed);
    auto g = random_graph(seed);
    auto before = g->clone();
    PassContext ctx;
    ctx.verify = true;
    optimize(*g, ctx);
    verify(*g);
    for (const Node* n : g->nodes()) {
      ASSERT_GE(n->group, 0) << n->label() << " is in no fused group";
      ASSERT_LT(n->group, static_cast<int>(g->groups.size()));
    }
    const double diff = max_rel_diff(*before, *g, {{"x", random_tensor({1, 4, 8, 8}, seed)}});
    ASSERT_LE(diff, 1e-4);
  }
}
