#pragma once
/// What the NVRTC build tests share: a module of several kernels built for one architecture.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/cuda/nvrtc_compiler.h"

namespace yoloc::codegen::cuda::testing {

/// `source` built by NVRTC for `arch` (entry kernel symbols.front()), checked to give a cubin
/// and to hold every kernel of `symbols`; the module, for further checks of its PTX.
inline CompiledModule expect_module_builds(const std::string& source,
                                           const std::vector<std::string>& symbols,
                                           const std::string& arch) {
  NvrtcOptions opts;
  opts.arch = arch;
  CompiledModule out = nvrtc_compile(source, symbols.front(), opts);
  EXPECT_GT(out.cubin.size(), 1000u);
  for (const std::string& sym : symbols)
    EXPECT_NE(out.ptx.find(".entry " + sym + "("), std::string::npos) << sym;
  return out;
}

}  // namespace yoloc::codegen::cuda::testing
