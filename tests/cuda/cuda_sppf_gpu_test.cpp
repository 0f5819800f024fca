// GPU tests of the SPPF template (label gpu; they skip where there is no CUDA device or driver):
// the groups of the emulated tests at model sizes (yolov8n's SPPF at batch 1 and 32, 1280-pixel
// inputs' 40x40, YOLO11 at 320's 10x10, YOLOX's SPP, a tiled 70x45, odd sizes), fp32, fp16 and
// bf16 storage, every valid config of yolov8n's, against the reference executor bit for bit,
// with a timing line per group: the default config, the fastest config, and the generic
// template's kernel of the same group.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>

#include "codegen/cuda/nvrtc_compiler.h"
#include "gpu_test_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "sppf_test_util.h"

namespace yoloc::codegen::cuda::testing {
namespace {

namespace rt = runtime::cuda;


struct Workload {
  const char* what;
  std::unique_ptr<Graph> (*make)();
  bool all_configs = false;  ///< check and time every valid config (fp16)
};

std::vector<Workload> workloads() {
  return {
      {"yolov8n SPPF 128ch @20", [] { return sppf_graph(1, 128, 20, 20); }, true},
      {"yolov8n SPPF 128ch @20, batch 32", [] { return sppf_graph(32, 128, 20, 20); }, true},
      {"SPPF 256ch @40 (1280 input)", [] { return sppf_graph(1, 256, 40, 40); }},
      {"yolo11n-320 SPPF 128ch @10", [] { return sppf_graph(1, 128, 10, 10); }},
      {"YOLOX SPP 5/9/13 128ch @13", [] { return spp_graph(1, 128, 13, 13); }},
      {"SPPF 64ch @70x45 (tiled)", [] { return sppf_graph(1, 64, 70, 45); }},
      {"SPPF 12ch @13x17, batch 2", [] { return sppf_graph(2, 12, 13, 17); }},
  };
}

// The device side of one case: buffers, and launches of kernels built from `source`.
class DeviceCase {
 public:
  DeviceCase(const GroupCase& c, const CaseData& d) : c_(c), d_(d) {
    for (const auto& b : d.inputs) add(b);
    for (const auto& b : d.outputs) add(b);
  }

  // Resets the outputs, runs `launch` once and checks them; then returns its time (us, median
  // of 50 after warm-up).
  double check_and_time(const std::function<void(rt::Stream&)>& launch, bool exact) {
    for (size_t i = 0; i < d_.outputs.size(); ++i) {
      bufs_[d_.inputs.size() + i].upload(d_.outputs[i].data());
    }
    rt::Stream stream;
    launch(stream);
    stream.synchronize();
    std::vector<std::vector<uint8_t>> got = d_.outputs;
    for (size_t i = 0; i < got.size(); ++i) bufs_[d_.inputs.size() + i].download(got[i].data());
    EXPECT_TRUE(check_outputs(c_, d_, got, exact));
    for (int i = 0; i < 5; ++i) launch(stream);
    constexpr int kRuns = 50;
    rt::Event start, stop;
    start.record(stream);
    for (int i = 0; i < kRuns; ++i) launch(stream);
    stop.record(stream);
    stop.synchronize();
    return 1000.0 * stop.elapsed_ms_since(start) / kRuns;
  }

  std::vector<CUdeviceptr>& ptrs() { return ptrs_; }

 private:
  void add(const std::vector<uint8_t>& host) {
    bufs_.emplace_back(std::max<size_t>(host.size(), 4));
    bufs_.back().upload(host.data());
    ptrs_.push_back(bufs_.back().ptr());
  }

  const GroupCase& c_;
  const CaseData& d_;
  std::vector<rt::DeviceBuffer> bufs_;
  std::vector<CUdeviceptr> ptrs_;
};

void run_workload(const Workload& w) {
  const auto g = optimized(w.make());
  NvrtcOptions opts;
  opts.arch = context()->info().arch();
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const auto cases = sppf_cases(*g, dtype, w.what);
    ASSERT_EQ(cases.size(), 1u) << w.what;
    const SppfCase& c = cases[0];
    SCOPED_TRACE(c.group.what);
    CaseData d = make_data(c.group, 91);
    DeviceCase dev(c.group, d);

    // The SPPF kernels: the default config (and every valid one for fp16 where asked).
    std::vector<ScheduleConfig> cfgs = {SppfTemplate::default_config(c.task)};
    if (w.all_configs && dtype == DType::kFloat16) {
      const ScheduleSpace sp = SppfTemplate::space(c.task);
      for (int64_t cb : sp.find("channels")->domain)
        for (int64_t tile : sp.find("tile")->domain)
          for (int64_t threads : sp.find("threads")->domain) {
            const ScheduleConfig cfg({{"channels", cb}, {"tile", tile}, {"threads", threads}});
            if (SppfTemplate::valid(c.task, cfg) && !(cfg == cfgs[0])) cfgs.push_back(cfg);
          }
    }
    std::string source;
    std::vector<CudaKernel> kernels;
    for (size_t i = 0; i < cfgs.size(); ++i) {
      kernels.push_back(SppfTemplate::emit(c.task, cfgs[i], fmt::format("sppf_{}", i)));
      source += kernels.back().source;
    }
    const rt::Module module(nvrtc_compile(source, c.group.what, opts).cubin);
    std::vector<void*> args;
    for (CUdeviceptr& p : dev.ptrs()) args.push_back(&p);
    double default_us = 0, best_us = std::numeric_limits<double>::infinity();
    std::string best;
    for (size_t i = 0; i < kernels.size(); ++i) {
      SCOPED_TRACE(cfgs[i].str());
      const CudaKernel& k = kernels[i];
      const CUfunction fn = kernel_function(module, k);
      const double us = dev.check_and_time(
          [&](rt::Stream& s) {
            rt::launch(fn, {k.grid, k.block, k.shared_bytes}, args.data(), &s);
          },
          true);
      if (i == 0) default_us = us;
      if (us < best_us) best_us = us, best = cfgs[i].str();
    }

    // The generic template's kernels of the same group, for comparison (no constants: its
    // arguments are x, the outputs, its scratch).
    ASSERT_TRUE(c.group.task.constants.empty());
    const GenericKernels gk =
        GenericTemplate::emit(c.group.task, GenericTemplate::default_config(c.group.task), "gk");
    const rt::Module gmod(nvrtc_compile(gk.source, c.group.what, opts).cubin);
    rt::DeviceBuffer scratch(std::max<uint64_t>(gk.scratch_bytes, 4));
    // Its pointers are at the values' first elements.
    std::vector<CUdeviceptr> gptrs = dev.ptrs();
    gptrs[0] += static_cast<CUdeviceptr>(c.group.in_offset[0]) * dtype_size(dtype);
    for (size_t k = 0; k < c.group.out_offset.size(); ++k) {
      gptrs[1 + k] += static_cast<CUdeviceptr>(c.group.out_offset[k]) * dtype_size(dtype);
    }
    gptrs.push_back(scratch.ptr());
    std::vector<void*> gargs;
    for (CUdeviceptr& p : gptrs) gargs.push_back(&p);
    const double generic_us = dev.check_and_time(
        [&](rt::Stream& s) {
          for (const CudaKernel& l : gk.launches) {
            rt::launch(gmod.function(l.symbol), {l.grid, l.block, l.shared_bytes}, gargs.data(),
                       &s);
          }
        },
        false);
    // Traffic of a concat of x and three pools: x read, three slices written.
    const size_t bytes = d.inputs[0].size() / 4 + d.outputs[0].size() * 3 / 4;
    std::printf(
        "[timing] %-36s %-4s sppf default %8.2f us (%s, %6.1f GB/s) best %8.2f us (%s) "
        "generic %8.2f us\n",
        w.what, short_dtype_name(dtype), default_us, cfgs[0].str().c_str(),
        static_cast<double>(bytes) / default_us * 1e-3, best_us, best.c_str(), generic_us);
  }
}

class CudaGpuSppf : public ::testing::TestWithParam<int> {};

TEST_P(CudaGpuSppf, MatchesReference) {
  YOLOC_REQUIRE_GPU();
  run_workload(workloads().at(static_cast<size_t>(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(Groups, CudaGpuSppf,
                         ::testing::Range(0, static_cast<int>(workloads().size())));

}  // namespace
}  // namespace yoloc::codegen::cuda::testing
