#include "codegen/cpu/kernel_table.h"

#include <fmt/format.h>

#include "core/error.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::codegen::cpu {

std::string kernel_table_source(const artifact::Program& prog,
                                const std::vector<std::vector<bool>>& writes) {
  YOLOC_CHECK(writes.size() == prog.calls.size(), "kernel table: {} write lists for {} calls",
              writes.size(), prog.calls.size());
  // The types of kernel_abi.h, spelled here because generated sources have no include path.
  std::string s = R"(
// ---- the kernel table (include/yoloc/kernel_abi.h): the runtime calls only what it lists
typedef void (*yc_kernel_fn)(void* const*, const int64_t*, int64_t, int64_t);
struct yc_kernel_entry {
  const char* name;
  yc_kernel_fn fn;
  int64_t work_items;
  uint32_t n_args;
  uint32_t n_params;
  const uint64_t* arg_bytes;
  const uint8_t* arg_writes;
};
struct yc_kernel_table {
  uint32_t abi;
  uint32_t count;
  const yc_kernel_entry* entries;
};
)";
  std::string entries;
  for (size_t i = 0; i < prog.calls.size(); ++i) {
    const artifact::KernelCall& c = prog.calls[i];
    YOLOC_CHECK(writes[i].size() == c.args.size(), "kernel table: call {} has {} bindings, {} "
                "write flags", i, c.args.size(), writes[i].size());
    std::string bytes, w;
    for (size_t k = 0; k < c.args.size(); ++k) {
      bytes += fmt::format("{}{}u", k ? ", " : "", c.args[k].bytes);
      w += fmt::format("{}{}", k ? ", " : "", writes[i][k] ? 1 : 0);
    }
    const bool any = !c.args.empty();
    if (any)
      s += fmt::format("static const uint64_t yc_bytes{0}[] = {{{1}}};\n"
                       "static const uint8_t yc_writes{0}[] = {{{2}}};\n",
                       i, bytes, w);
    entries += fmt::format("  {{\"{0}\", {0}, {1}, {2}, {3}, {4}, {5}}},\n", c.symbol,
                           c.work_items, c.args.size(), c.params.size(),
                           any ? fmt::format("yc_bytes{}", i) : "nullptr",
                           any ? fmt::format("yc_writes{}", i) : "nullptr");
  }
  if (prog.calls.empty()) {
    s += fmt::format(
        "extern \"C\" __attribute__((visibility(\"default\"))) const yc_kernel_table {} = "
        "{{{}, 0, nullptr}};\n",
        YOLOC_KERNEL_TABLE_SYMBOL, YOLOC_KERNEL_ABI_VERSION);
    return s;
  }
  s += "static const yc_kernel_entry yc_entries[] = {\n" + entries + "};\n";
  s += fmt::format(
      "extern \"C\" __attribute__((visibility(\"default\"))) const yc_kernel_table {} = "
      "{{{}, {}, yc_entries}};\n",
      YOLOC_KERNEL_TABLE_SYMBOL, YOLOC_KERNEL_ABI_VERSION, prog.calls.size());
  return s;
}

}  // namespace yoloc::codegen::cpu
