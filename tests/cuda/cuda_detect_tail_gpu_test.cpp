// GPU tests of the detect-tail template (label gpu; they skip where there is no CUDA device or
// driver): yolov8n's tail shape (640, 80 classes) at batch 1, 16 and 128, YOLO11's form at 320,
// fp32 / fp16 / bf16 head outputs, every valid config at batch 1 and 128 (fp16), against the
// reference executor on the group alone, with a timing line per case: the default config, the
// fastest config, and the generic template's kernels of the same group.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>

#include "codegen/cuda/nvrtc_compiler.h"
#include "detect_tail_test_util.h"
#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;


struct Workload {
  const char* what;
  TailSpec spec;
  std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  bool all_configs = false;  ///< check and time every valid config (fp16)
};

std::vector<Workload> workloads() {
  return {
      {"yolov8n tail 640, batch 1", {.n = 1}, {DType::kFloat32, DType::kFloat16, DType::kBFloat16},
       true},
      {"yolov8n tail 640, batch 16", {.n = 16}, {DType::kFloat16}},
      {"yolov8n tail 640, batch 128", {.n = 128}, {DType::kFloat16}, true},
      {"yolo11n tail 320 (v11 softmax), batch 1",
       {.n = 1, .size = 320, .v11_softmax = true, .split_heads = true}},
      {"xyxy tail 640, random DFL weights, batch 2",
       {.n = 2, .xyxy = true, .random_dfl = true}, {DType::kFloat16}},
  };
}

// Device buffers of a case's host buffers (inputs, then outputs).
class DeviceCase {
 public:
  DeviceCase(const GroupCase& c, const CaseData& d) : c_(c), d_(d) {
    for (const auto& b : d.inputs) add(b);
    for (const auto& b : d.outputs) add(b);
  }

  // Resets the outputs, runs `launch` once and checks them; then returns its time (us, the mean
  // of 50 runs after warm-up).
  double check_and_time(const std::function<void(rt::Stream&)>& launch) {
    for (size_t i = 0; i < d_.outputs.size(); ++i) {
      bufs_[d_.inputs.size() + i].upload(d_.outputs[i].data());
    }
    rt::Stream stream;
    launch(stream);
    stream.synchronize();
    std::vector<std::vector<uint8_t>> got = d_.outputs;
    for (size_t i = 0; i < got.size(); ++i) bufs_[d_.inputs.size() + i].download(got[i].data());
    EXPECT_TRUE(check_outputs(c_, d_, got));
    for (int i = 0; i < 5; ++i) launch(stream);
    constexpr int kRuns = 50;
    rt::Event start, stop;
    start.record(stream);
    for (int i = 0; i < kRuns; ++i) launch(stream);
    stop.record(stream);
    stop.synchronize();
    return 1000.0 * stop.elapsed_ms_since(start) / kRuns;
  }

  // Pointers at the values' first elements: input k, output k.
  CUdeviceptr input(size_t k) const {
    return bufs_[k].ptr() + static_cast<CUdeviceptr>(c_.in_offset[k]) *
                                dtype_size(c_.task.inputs[k].dtype);
  }
  CUdeviceptr output(size_t k) const {
    return bufs_[d_.inputs.size() + k].ptr() +
           static_cast<CUdeviceptr>(c_.out_offset[k]) * dtype_size(c_.task.outputs[k].dtype);
  }

 private:
  void add(const std::vector<uint8_t>& host) {
    bufs_.emplace_back(std::max<size_t>(host.size(), 4));
    bufs_.back().upload(host.data());
  }

  const GroupCase& c_;
  const CaseData& d_;
  std::vector<rt::DeviceBuffer> bufs_;
};

rt::DeviceBuffer upload_floats(const std::vector<float>& v) {
  rt::DeviceBuffer b(std::max<size_t>(v.size() * 4, 4));
  if (!v.empty()) b.upload(v.data());
  return b;
}

void run_workload(const Workload& w) {
  const auto g = optimized(dfl_tail_graph(w.spec));
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  for (DType dtype : w.dtypes) {
    const auto cases = detect_tail_cases(*g, dtype, w.what);
    ASSERT_EQ(cases.size(), 1u) << w.what;
    const DetectTailCase& c = cases[0];
    SCOPED_TRACE(c.group.what);
    CaseData d = make_data(c.group, 29);
    DeviceCase dev(c.group, d);

    std::vector<ScheduleConfig> cfgs = {DetectTailTemplate::default_config(c.task)};
    if (w.all_configs && dtype == DType::kFloat16) {
      const ScheduleSpace sp = DetectTailTemplate::space(c.task);
      for (int64_t threads : sp.find("threads")->domain)
        for (int64_t chunk : sp.find("class_chunk")->domain) {
          const ScheduleConfig cfg({{"threads", threads}, {"class_chunk", chunk}});
          if (DetectTailTemplate::valid(c.task, cfg) && !(cfg == cfgs[0])) cfgs.push_back(cfg);
        }
    }
    std::string source;
    std::vector<CudaKernel> kernels;
    for (size_t i = 0; i < cfgs.size(); ++i) {
      kernels.push_back(DetectTailTemplate::emit(c.task, cfgs[i], fmt::format("dt_{}", i)));
      source += kernels.back().source;
    }
    const rt::Module module(nvrtc_compile(source, c.group.what, opts).cubin);
    // The kernel's arguments: the head outputs, the table, the output.
    rt::DeviceBuffer table = upload_floats(c.task.table);
    std::vector<CUdeviceptr> ptrs;
    for (const CudaOperand& o : c.task.inputs) {
      size_t k = 0;
      while (k < c.group.task.inputs.size() && c.group.task.inputs[k].value != o.value) ++k;
      ASSERT_LT(k, c.group.task.inputs.size());
      ptrs.push_back(dev.input(k));
    }
    ptrs.push_back(table.ptr());
    ptrs.push_back(dev.output(0));
    std::vector<void*> args;
    for (CUdeviceptr& p : ptrs) args.push_back(&p);
    double default_us = 0, best_us = std::numeric_limits<double>::infinity();
    std::string best;
    for (size_t i = 0; i < kernels.size(); ++i) {
      SCOPED_TRACE(cfgs[i].str());
      const CudaKernel& k = kernels[i];
      const CUfunction fn = module.function(k.symbol);
      const double us = dev.check_and_time([&](rt::Stream& s) {
        rt::launch(fn, {k.grid, k.block, k.shared_bytes}, args.data(), &s);
      });
      if (i == 0) default_us = us;
      if (us < best_us) best_us = us, best = cfgs[i].str();
    }

    // The generic template's kernels of the same group: inputs, constants, outputs, scratch.
    const GenericKernels gk =
        GenericTemplate::emit(c.group.task, GenericTemplate::default_config(c.group.task), "gk");
    const rt::Module gmod(nvrtc_compile(gk.source, c.group.what, opts).cubin);
    std::vector<rt::DeviceBuffer> consts;
    for (const Tensor& t : d.constants) {
      consts.emplace_back(std::max<size_t>(t.nbytes(), 4));
      consts.back().upload(t.raw());
    }
    rt::DeviceBuffer scratch(std::max<uint64_t>(gk.scratch_bytes, 4));
    std::vector<CUdeviceptr> gptrs;
    for (size_t k = 0; k < d.inputs.size(); ++k) gptrs.push_back(dev.input(k));
    for (const rt::DeviceBuffer& b : consts) gptrs.push_back(b.ptr());
    for (size_t k = 0; k < d.outputs.size(); ++k) gptrs.push_back(dev.output(k));
    gptrs.push_back(scratch.ptr());
    std::vector<void*> gargs;
    for (CUdeviceptr& p : gptrs) gargs.push_back(&p);
    const double generic_us = dev.check_and_time([&](rt::Stream& s) {
      for (const CudaKernel& l : gk.launches) {
        rt::launch(gmod.function(l.symbol), {l.grid, l.block, l.shared_bytes}, gargs.data(), &s);
      }
    });
    // Traffic: the head outputs' box and class channels read once, the output written once.
    const double bytes = static_cast<double>(c.task.n * c.task.anchors) *
                         static_cast<double>((4 * c.task.bins + c.task.classes) *
                                                 dtype_size(dtype) +
                                             (4 + c.task.classes) * dtype_size(dtype));
    std::printf(
        "[timing] %-44s %-4s detect_tail default %8.2f us (%s, %6.1f GB/s) best %8.2f us (%s) "
        "generic %8.2f us (%zu launches)\n",
        w.what, short_dtype_name(dtype), default_us, cfgs[0].str().c_str(),
        bytes / default_us * 1e-3, best_us, best.c_str(), generic_us, gk.launches.size());
  }
}

class CudaGpuDetectTail : public ::testing::TestWithParam<int> {};

TEST_P(CudaGpuDetectTail, MatchesReference) {
  YOLOC_REQUIRE_GPU();
  run_workload(workloads().at(static_cast<size_t>(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(Groups, CudaGpuDetectTail,
                         ::testing::Range(0, static_cast<int>(workloads().size())));

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
