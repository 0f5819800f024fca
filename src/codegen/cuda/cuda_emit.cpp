#include "codegen/cuda/cuda_emit.h"

#include <fmt/format.h>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {

const char* const kCudaDevicePrelude = cuh::device_prelude;

const char* const kCudaCommonPrelude = cuh::common_prelude;

std::string wgmma_source(int n, bool bf16) {
  YOLOC_CHECK(n >= 8 && n <= 256 && n % 8 == 0, "wgmma has no N of {}", n);
  const int d = n / 2;
  std::string regs, outs;
  for (int i = 0; i < d; ++i) {
    regs += fmt::format("{}%{}", i ? ", " : "", i);
    outs += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  const char* t = bf16 ? "bf16" : "f16";
  // The two forms: A from registers (immediates scale-a, scale-b, transpose-b) and A from shared
  // memory (scale-a, scale-b, transpose-a, transpose-b); D accumulates (scale-d = 1).
  const auto form = [&](const char* name, const std::string& params, const std::string& a_ops,
                        const std::string& a_ins, int after_a, const char* imm) {
    return fmt::format(
        "template <>\n"
        "YC_DEVICE void {name}<{n}, {b}>(float (&d)[{d}], {params},\n"
        "                                   unsigned long long desc) {{\n"
        "  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{s}, 0;\\n\"\n"
        "               \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{regs}}}, \"\n"
        "               \"{a_ops}, %{dc}, p, {imm};\\n}}\\n\"\n"
        "               : {outs}\n"
        "               : {a_ins}, \"l\"(desc), \"r\"(1)\n"
        "               : \"memory\");\n"
        "}}\n",
        fmt::arg("name", name), fmt::arg("params", params), fmt::arg("a_ops", a_ops),
        fmt::arg("a_ins", a_ins), fmt::arg("imm", imm), fmt::arg("n", n),
        fmt::arg("b", bf16 ? 1 : 0), fmt::arg("d", d), fmt::arg("t", t), fmt::arg("regs", regs),
        fmt::arg("outs", outs), fmt::arg("dc", d + after_a), fmt::arg("s", d + after_a + 1));
  };
  const std::string rs = form("yc_wgmma", "const yc_u32 (&a)[4]",
                              fmt::format("{{%{}, %{}, %{}, %{}}}", d, d + 1, d + 2, d + 3),
                              "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3])", 4, "1, 1, 0");
  const std::string ss = form("yc_wgmma_ss", "unsigned long long desc_a", fmt::format("%{}", d),
                              "\"l\"(desc_a)", 1, "1, 1, 0, 0");
  return fmt::format(
      "#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(YC_WGMMA_{n}_{b})\n"
      "#define YC_WGMMA_{n}_{b}\n{rs}{ss}#endif\n",
      fmt::arg("n", n), fmt::arg("b", bf16 ? 1 : 0), fmt::arg("rs", rs), fmt::arg("ss", ss));
}

std::string cuda_prelude() { return std::string(kCudaDevicePrelude) + kCudaCommonPrelude; }

std::string cuda_storage_type(DType t) {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kFloat16: return "yc_half";
    case DType::kBFloat16: return "yc_bf16";
    default: internal_error("no CUDA storage type for {}", dtype_name(t));
  }
}

const char* cuda_act_function(Activation a, DType out) {
  if (a == Activation::kRelu) return "yc_act_relu";
  if (a != Activation::kSilu) return "yc_act_none";
  return out == DType::kFloat32 ? "yc_act_silu" : "yc_act_silu_fast";
}

std::string conv_common_source(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  // Class scores (a b2b pair's second stage stores them, not its first): the sigmoid, to about 2
  // ulp of float32 where 16-bit values take part (the conv's inputs or its output), as the
  // detect tail takes it.
  const bool scores = task.scores && !task.b2b;
  const bool narrow = task.dtype != DType::kFloat32 || task.out_dtype != DType::kFloat32;
  const char* act = scores ? (narrow ? "yc_act_sigmoid_fast" : "yc_act_sigmoid")
                           : cuda_act_function(t.act, task.out_dtype);
  return fmt::format(
      fmt::runtime(cuh::conv_common), fmt::arg("in_t", cuda_storage_type(task.dtype)),
      fmt::arg("out_t", cuda_storage_type(task.out_dtype)), fmt::arg("n", t.n), fmt::arg("c", t.c),
      fmt::arg("h", t.h), fmt::arg("w", t.w), fmt::arg("k", t.k), fmt::arg("oh", t.oh),
      fmt::arg("ow", t.ow), fmt::arg("kh", t.kh), fmt::arg("kw", t.kw), fmt::arg("sh", t.sh),
      fmt::arg("sw", t.sw), fmt::arg("ph", t.ph), fmt::arg("pw", t.pw), fmt::arg("dh", t.dh),
      fmt::arg("dw", t.dw), fmt::arg("is", task.in.stride), fmt::arg("io", task.in.offset),
      fmt::arg("os", task.out.stride), fmt::arg("oo", task.out.offset),
      fmt::arg("rs", task.res.stride), fmt::arg("ro", task.res.offset),
      fmt::arg("res", t.residual ? 1 : 0), fmt::arg("out_nchw", task.out_nchw ? 1 : 0),
      fmt::arg("oplane", scores ? task.scores->plane : t.oh * t.ow),
      fmt::arg("obase", scores ? task.scores->base : 0), fmt::arg("act", act),
      fmt::arg("up", task.up ? 1 : 0), fmt::arg("ush", task.up ? task.up->sh : 1),
      fmt::arg("usw", task.up ? task.up->sw : 1), fmt::arg("us", task.up ? task.up->out.stride : 0),
      fmt::arg("uo", task.up ? task.up->out.offset : 0));
}

CudaKernel conv_kernel(const CudaConvTask& t, const std::string& symbol, const std::string& label,
                       const std::string& config, std::string body,
                       std::initializer_list<std::pair<const char*, std::string>> subs) {
  YOLOC_CHECK(cpu::is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  for (const auto& [from, to] : subs) cpu::replace_all(body, from, to);
  cpu::replace_all(body, "@SYM@", symbol);
  CudaKernel k;
  k.symbol = symbol;
  k.source = cuda_prelude() + "// " + t.key() + " | " + label + config + "\nnamespace " + symbol +
             "_ns {\n" + conv_common_source(t) + body;
  return k;
}

}  // namespace yoloc::codegen::cuda
