// The generic CUDA template over the shared models: every fused group (target "cuda", batch 1,
// precision fp32 and fp16) that neither conv template takes gets a generic task (dense
// operands: NHWC strides for NHWC values, row-major for the others; fp16 and fp32 storage)
// whose kernels build with NVRTC for
// sm_80 and sm_90. The groups refused are printed with the reason, and may only be those of the
// ops the template does not implement (yolov10n's TopK / GatherElements selection).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/generic_template.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/simt_conv_template.h"
#include "codegen/cuda/tc_conv_template.h"
#include "frontend/onnx/importer.h"
#include "passes/pipeline.h"
#include "targets/cuda/cuda_attributes.h"

namespace yoloc::codegen::cuda {
namespace {

std::filesystem::path models_dir() {
  const char* env = std::getenv("YOLOC_SHARED_DIR");
  return std::filesystem::path(env ? env : YOLOC_SHARED_DIR) / "models";
}

bool conv_template_takes(const Graph& g, const FusedGroup& grp) {
  const auto tc = cuda_conv_task_from_group(g, grp, DType::kFloat16, DType::kFloat16);
  const auto simt = cuda_conv_task_from_group(g, grp, DType::kFloat32, DType::kFloat32);
  return (tc && TensorCoreConvTemplate::matches(*tc)) || (simt && SimtConvTemplate::matches(*simt));
}

std::string ops_of(const Graph& g, const FusedGroup& grp) {
  std::string s;
  for (const Node* n : g.nodes()) {
    if (n->group == grp.id) s += (s.empty() ? "" : ",") + n->op;
  }
  return s;
}

class GenericModels : public ::testing::TestWithParam<const char*> {};

TEST_P(GenericModels, EveryOtherGroupBuildsWithNvrtc) {
  const std::filesystem::path path = models_dir() / GetParam();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  // Ops whose groups the template may refuse (not implemented); anything else must be taken.
  const std::set<std::string> unsupported = {"TopK", "GatherElements", "Gather", "Tile", "Mod",
                                             "ReduceMax"};
  int taken = 0, conv = 0, refused = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    // The graph as the CUDA compiler sees it at this precision (the int8 models' convolutions
    // are dequantized to float ones).
    onnx_frontend::ImportOptions io;
    io.fix_dims = {{"batch", 1}, {"height", 640}, {"width", 640}};
    auto g = onnx_frontend::import_onnx(path.string(), io);
    PassContext ctx;
    ctx.target = yoloc::targets::cuda_attributes();
    ctx.precision = dtype == DType::kFloat16 ? Precision::kFp16 : Precision::kFp32;
    optimize(*g, ctx);
    const auto operand_of = [dtype](const Value* v) {
      return CudaOperand{v, dtype, dense_operand_strides(v)};
    };
    std::string source;
    std::vector<std::string> symbols;
    for (const FusedGroup& grp : g->groups) {
      if (!grp.is_kernel()) continue;
      if (conv_template_takes(*g, grp)) {
        conv += dtype == DType::kFloat32;
        continue;
      }
      std::string why;
      const auto task = generic_task_from_group(*g, grp, operand_of, &why);
      if (!task) {
        if (dtype == DType::kFloat32) {
          ++refused;
          std::printf("[refused] %s group %d '%s' (%s): %s\n", GetParam(), grp.id,
                      grp.name.c_str(), ops_of(*g, grp).c_str(), why.c_str());
        }
        bool allowed = false;
        for (const Node* n : g->nodes()) {
          allowed = allowed || (n->group == grp.id && unsupported.count(n->op));
        }
        EXPECT_TRUE(allowed) << grp.name << " (" << ops_of(*g, grp) << ") refused: " << why;
        continue;
      }
      taken += dtype == DType::kFloat32;
      EXPECT_TRUE(GenericTemplate::matches(*task));
      const std::string prefix = fmt::format("g{}", grp.id);
      const GenericKernels k =
          GenericTemplate::emit(*task, GenericTemplate::default_config(*task), prefix);
      EXPECT_FALSE(k.launches.empty());
      source += k.source;
      for (const CudaKernel& l : k.launches) symbols.push_back(l.symbol);
      if (dtype == DType::kFloat32 && k.launches.size() > 1) {
        std::printf("[launches] %s group %d '%s': %zu launches, %llu scratch bytes\n", GetParam(),
                    grp.id, grp.name.c_str(), k.launches.size(),
                    static_cast<unsigned long long>(k.scratch_bytes));
      }
    }
    for (const char* arch : {"sm_80", "sm_90"}) {
      NvrtcOptions opts;
      opts.arch = arch;
      CompiledModule m;
      ASSERT_NO_THROW(m = nvrtc_compile(source, GetParam(), opts))
          << GetParam() << " " << dtype_name(dtype) << " " << arch;
      for (const std::string& s : symbols) {
        EXPECT_NE(m.ptx.find(".entry " + s + "("), std::string::npos) << s;
      }
    }
  }
  std::printf("[groups] %s: %d generic, %d conv-template, %d refused\n", GetParam(), taken, conv,
              refused);
  EXPECT_GT(taken, 0);
}

INSTANTIATE_TEST_SUITE_P(Shared, GenericModels,
                         ::testing::Values("yolov8n.onnx", "yolov8n-dynint8.onnx",
                                           "yolov8n-dynint8-dynshape.onnx",
                                           "yolo11n-dynint8-320.onnx", "yolov10n-dynint8-e2e.onnx",
                                           "yolov5n-fp16-dynbatch.onnx",
                                           "yolox-nano-facemask.onnx"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace yoloc::codegen::cuda
