#pragma once
/// Shared pieces of the tuner tests: a small graph with conv and elementwise tasks, and a
/// temporary folder per test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "graph_builder.h"
#include "passes/pipeline.h"
#include "tuner/cpu_tasks.h"
#include "targets/cpu/cpu_attributes.h"

namespace yoloc::testing {

/// c0 = Conv 3x3 (3 -> 16) of x[1,3,12,12]; a = Conv 3x3 (16 -> 32) of c0; then Conv 1x1
/// (32 -> 16) of Tanh(Sigmoid(a) * c) and of a itself, each followed by a Sigmoid (graph
/// outputs). Optimized for the CPU: the 3x3 convs, the elementwise chain (blocked layout; it
/// cannot fuse into the conv, whose output has another reader), the 1x1 conv, which two groups
/// share, and the kernels that write the outputs.
inline std::unique_ptr<Graph> small_tuning_graph() {
  auto g = std::make_unique<Graph>();
  Value* x = input(*g, "x", {1, 3, 12, 12});
  Value* c0 = conv(*g, x, 3, 16, 3, 7);
  Value* a = conv(*g, c0, 16, 32, 3, 1);
  Value* c = g->add_constant("c", random_tensor({1, 32, 1, 1}, 5, 0.5f, 2.f));
  Value* e = node(*g, "Tanh", {node(*g, "Mul", {node(*g, "Sigmoid", {a}), c})});
  g->outputs = {node(*g, "Sigmoid", {conv(*g, e, 32, 16, 1, 3)}),
                node(*g, "Sigmoid", {conv(*g, a, 32, 16, 1, 3)})};
  PassContext ctx;
  ctx.target = yoloc::targets::cpu_attributes();
  optimize(*g, ctx);
  return g;
}

/// The task of `tasks` whose template is `name` (fails the test when there is none).
inline const tuner::TuneTask* task_of(const std::vector<tuner::TuneTask>& tasks,
                                      const std::string& name) {
  for (const tuner::TuneTask& t : tasks)
    if (t.task.template_name == name) return &t;
  ADD_FAILURE() << "no " << name << " task";
  return nullptr;
}

/// A folder under the system's temporary folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("yoloc_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace yoloc::testing
