// BatchNormalization, InstanceNormalization and LayerNormalization on hand-computed cases.
#include "op_test_util.h"

using namespace yoloc;
using namespace yoloc::testing;

TEST(BatchNormalization, InferenceUsesRunningStatistics) {
  auto x = tensor<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  Attrs a;
  a.set("epsilon", 0.0f);
  auto y = run_op("BatchNormalization",
                  {x, tensor<float>({2}, {1, 2}), tensor<float>({2}, {0, 1}),
                   tensor<float>({2}, {1, 3}), tensor<float>({2}, {4, 1})},
                  a);
  expect_values(y[0], {1, 2, 1, 2}, {0, 0.5, 1, 3});
}

TEST(BatchNormalization, TrainingModeUpdatesRunningStatistics) {
  auto x = tensor<float>({2, 1, 1, 1}, {1, 3});  // batch mean 2, population variance 1
  Attrs a;
  a.set("epsilon", 0.0f);
  a.set("momentum", 0.5f);
  a.set("training_mode", int64_t{1});
  auto y = run_op("BatchNormalization",
                  {x, tensor<float>({1}, {1}), tensor<float>({1}, {0}), tensor<float>({1}, {0}),
                   tensor<float>({1}, {3})},
                  a, 3);
  expect_values(y[0], {2, 1, 1, 1}, {-1, 1});
  expect_values(y[1], {1}, {1});
  expect_values(y[2], {1}, {2});
}

TEST(InstanceNormalization, PerPlane) {
  auto x = tensor<float>({1, 2, 2}, {1, 3, 10, 12});
  Attrs a;
  a.set("epsilon", 0.0f);
  auto y = run_op("InstanceNormalization",
                  {x, tensor<float>({2}, {2, 1}), tensor<float>({2}, {1, 5})}, a);
  expect_values(y[0], {1, 2, 2}, {-1, 3, 4, 6});
}

TEST(LayerNormalization, LastAxisWithStatistics) {
  auto x = tensor<float>({2, 2}, {1, 3, 2, 6});
  Attrs a;
  a.set("epsilon", 0.0f);
  auto y = run_op("LayerNormalization", {x, tensor<float>({2}, {1, 2}), tensor<float>({2}, {0, 1})},
                  a, 3);
  expect_values(y[0], {2, 2}, {-1, 3, -1, 3});
  expect_values(y[1], {2, 1}, {2, 4});
  expect_values(y[2], {2, 1}, {1, 0.5});
}

TEST(LayerNormalization, AxisZeroNormalisesEverything) {
  auto x = tensor<float>({2, 1}, {0, 2});
  Attrs a;
  a.set("axis", int64_t{0});
  a.set("epsilon", 0.0f);
  auto y = run_op("LayerNormalization", {x, tensor<float>({1}, {3})}, a);
  expect_values(y[0], {2, 1}, {-3, 3});
  a.set("axis", int64_t{2});
  EXPECT_THROW(run_op("LayerNormalization", {x, tensor<float>({1}, {3})}, a), UserError);
}
