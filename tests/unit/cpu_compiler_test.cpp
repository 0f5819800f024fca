// The CPU compiler driver: every task of the shared models lowered with its default config and
// called through its runtime-ABI wrapper (what the artifact's program calls), each compared with
// the reference run of its group's nodes; and the program of a whole model.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/cpu/cpu_compiler.h"
#include "runtime/kernel_library.h"
#include "runtime/thread_pool.h"
#include "cpu_test_util.h"
#include "graph_builder.h"
#include "ops/reference_executor.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::codegen::cpu {
namespace {

void check_every_task(const std::string& model) {
  auto g = shared_model(model);
  if (!g) GTEST_SKIP() << "no " << model;
  const std::vector<CpuTask> tasks = extract_cpu_tasks(*g);
  ASSERT_FALSE(tasks.empty());
  std::vector<LoweredKernel> kernels;
  std::string source;
  for (size_t i = 0; i < tasks.size(); ++i) {
    ASSERT_TRUE(tasks[i].valid(tasks[i].default_config)) << tasks[i].key;
    kernels.push_back(tasks[i].lower(tasks[i].default_config, "yc_t" + std::to_string(i)));
    std::vector<uint64_t> strides;
    for (const KernelArg& a : kernels.back().args)
      if (a.kind != KernelArg::Kind::kNull) strides.push_back(0);
    source += kernels.back().kernel.source;
    source += abi_wrapper_source(kernels.back(), "yc_k" + std::to_string(i), 1, strides);
  }
  const SharedObject so = compile_shared_object(source);
  runtime::KernelLibrary lib(so.bytes);
  runtime::ThreadPool pool(2);
  uint32_t seed = 7;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const CpuTask& t = tasks[i];
    SCOPED_TRACE(t.group_name + " | " + t.key);
    std::map<std::string, Tensor> feeds;
    std::vector<std::vector<float>> buffers;
    std::vector<void*> args;
    std::vector<const Value*> outputs;
    buffers.reserve(kernels[i].args.size());
    for (const KernelArg& a : kernels[i].args) {
      if (a.kind == KernelArg::Kind::kNull) continue;
      if (a.kind == KernelArg::Kind::kConstant) {
        buffers.push_back(a.data);
      } else if (a.output) {
        buffers.emplace_back(a.bytes / sizeof(float), NAN);
        outputs.push_back(a.value);
      } else {
        const Tensor x = testing::random_tensor(a.value->type.static_shape(), seed++, -3.f, 3.f);
        feeds[a.value->name] = x;
        buffers.push_back(to_layout(a.value, x));
      }
      args.push_back(buffers.back().data());
    }
    const auto fn = reinterpret_cast<yoloc_kernel_fn>(lib.symbol("yc_k" + std::to_string(i)));
    pool.parallel_for(kernels[i].kernel.work_items * t.batch,
                      [&](int64_t b, int64_t e) { fn(args.data(), nullptr, b, e); });
    const FusedGroup* grp = nullptr;
    for (const FusedGroup& f : g->groups)
      if (f.id == t.group) grp = &f;
    ASSERT_NE(grp, nullptr);
    const GroupIO io = group_io(*g, *grp);
    auto ref = subgraph(io);
    const auto want = run_reference(*ref, feeds);
    size_t out = 0;
    for (size_t k = 0, b = 0; k < kernels[i].args.size(); ++k) {
      const KernelArg& a = kernels[i].args[k];
      if (a.kind == KernelArg::Kind::kNull) continue;
      if (a.output) {
        const auto pos = std::find(io.outputs.begin(), io.outputs.end(), a.value) - io.outputs.begin();
        ASSERT_LT(static_cast<size_t>(pos), want.size());
        expect_close(from_layout(a.value, buffers[b]), want[static_cast<size_t>(pos)].tensor, a.value->name);
        ++out;
      }
      ++b;
    }
    EXPECT_EQ(out, io.outputs.size());
  }
}

TEST(CpuCompiler, EveryKernelOfYolov8nMatchesTheReference) { check_every_task("yolov8n.onnx"); }
TEST(CpuCompiler, EveryKernelOfYoloxNanoMatchesTheReference) {
  check_every_task("yolox-nano-facemask.onnx");
}

}  // namespace
}  // namespace yoloc::codegen::cpu
