// GPU tests of the generic CUDA template (label gpu; they skip where there is no CUDA device or
// driver): the groups of the emulated tests at model sizes (yolox-nano's depthwise convs,
// yolov8n's SPPF, Resize into a concat, YOLO11's attention block, the yolov8n detect tail at
// 640x640 with 80 classes, the YOLOv10 end-to-end tail with its TopK selections, TopK with
// ties, NaN and K = n around int64 index arithmetic), fp32 and fp16 storage, against the
// reference executor, with a timing line per group (all its launches, back to back).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "codegen/cuda/nvrtc_compiler.h"
#include "generic_test_util.h"
#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;


struct Workload {
  const char* what;
  std::unique_ptr<Graph> (*make)();
};

std::vector<Workload> workloads() {
  return {
      {"yolox-nano depthwise 3x3 64ch @104", [] { return depthwise_graph(1, 64, 104, 104, 1); }},
      {"depthwise 3x3 s2 128ch @52, batch 2", [] { return depthwise_graph(2, 128, 52, 52, 2); }},
      {"yolov8n SPPF 128ch @20", [] { return sppf_graph(1, 128, 20, 20); }},
      {"yolov8n resize 256ch 20->40 into concat",
       [] { return resize_concat_graph(1, 256, 20, 20); }},
      {"yolo11n attention 128ch @10", [] { return attention_graph(128, 10, 10); }},
      {"yolov8n detect tail 640 nc80", [] { return yolov8_tail_graph(640, 80); }},
      {"yolov10n e2e tail 640 nc80 k300", [] { return yolov10_tail_graph(640, 80, 300); }},
      {"TopK k64 of 1600, ties", [] { return select_graph(3, 40, 40, 64, SelectInput::kTies); }},
      {"TopK smallest k64 of 1600, NaN",
       [] { return select_graph(3, 40, 40, 64, SelectInput::kNaN, false); }},
      {"TopK k = n = 1600", [] { return select_graph(3, 40, 40, 1600, SelectInput::kPlain); }},
  };
}

void run_workload(const Workload& w) {
  const auto g = optimized(w.make());
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    for (const GroupCase& c : generic_cases(*g, dtype, w.what)) {
      SCOPED_TRACE(c.what);
      const GenericKernels k =
          GenericTemplate::emit(c.task, GenericTemplate::default_config(c.task), "gk");
      const rt::Module module(nvrtc_compile(k.source, c.what, opts).cubin);
      CaseData d = make_data(c, 77);
      std::vector<rt::DeviceBuffer> bufs;
      std::vector<CUdeviceptr> ptrs;
      const auto add = [&](const void* host, size_t bytes, size_t offset_bytes) {
        bufs.emplace_back(std::max<size_t>(bytes, 4));
        if (host) bufs.back().upload(host);
        ptrs.push_back(bufs.back().ptr() + offset_bytes);
      };
      size_t traffic = 0;
      for (size_t i = 0; i < d.inputs.size(); ++i) {
        add(d.inputs[i].data(), d.inputs[i].size(),
            static_cast<size_t>(c.in_offset[i]) * dtype_size(c.task.inputs[i].dtype));
        traffic += d.inputs[i].size();
      }
      for (const Tensor& t : d.constants) add(t.raw(), t.nbytes(), 0);
      const size_t first_out = ptrs.size();
      for (size_t i = 0; i < d.outputs.size(); ++i) {
        add(d.outputs[i].data(), d.outputs[i].size(),
            static_cast<size_t>(c.out_offset[i]) * dtype_size(c.task.outputs[i].dtype));
        traffic += d.outputs[i].size();
      }
      add(nullptr, k.scratch_bytes, 0);
      bufs.back().fill_bytes(0xff);
      std::vector<void*> args;
      for (CUdeviceptr& p : ptrs) args.push_back(&p);
      rt::Stream stream;
      const auto run_all = [&] {
        for (const CudaKernel& l : k.launches) {
          rt::launch(module.function(l.symbol), {l.grid, l.block, l.shared_bytes}, args.data(),
                     &stream);
        }
      };
      run_all();
      stream.synchronize();
      std::vector<std::vector<uint8_t>> got = d.outputs;
      for (size_t i = 0; i < got.size(); ++i) bufs[first_out + i].download(got[i].data());
      EXPECT_TRUE(check_outputs(c, d, got));
      for (int i = 0; i < 5; ++i) run_all();
      constexpr int kRuns = 50;
      rt::Event start, stop;
      start.record(stream);
      for (int i = 0; i < kRuns; ++i) run_all();
      stop.record(stream);
      stop.synchronize();
      const double us = 1000.0 * stop.elapsed_ms_since(start) / kRuns;
      std::printf("[timing] %-44s %-28s %zu launch(es) %9.2f us %8.1f GB/s (operands)\n",
                  w.what, c.what.substr(c.what.find("group")).c_str(), k.launches.size(), us,
                  static_cast<double>(traffic) / us * 1e-3);
    }
  }
}

class CudaGpuGeneric : public ::testing::TestWithParam<int> {};

TEST_P(CudaGpuGeneric, MatchesReference) {
  YOLOC_REQUIRE_GPU();
  run_workload(workloads().at(static_cast<size_t>(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(Groups, CudaGpuGeneric,
                         ::testing::Range(0, static_cast<int>(workloads().size())));

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
