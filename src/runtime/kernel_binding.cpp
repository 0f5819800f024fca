#include "runtime/kernel_binding.h"

#include <cstring>

#include "core/error.h"

namespace yoloc::runtime {
namespace {

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  user_error(
      "artifact '{}': {}; the manifest does not match its kernel library (edited or corrupt): "
      "recompile the model",
      where, what);
}

}  // namespace

std::vector<yoloc_kernel_fn> bind_kernel_table(const Program& prog, const yoloc_kernel_table& table,
                                               const std::string& where) {
  if (table.abi != YOLOC_KERNEL_ABI_VERSION)
    refuse(where, fmt::format("the kernel table is of ABI {}, this runtime speaks {}", table.abi,
                              YOLOC_KERNEL_ABI_VERSION));
  if (table.count != prog.calls.size() || (table.count > 0 && !table.entries))
    refuse(where, fmt::format("the program makes {} calls, the kernel library declares {}",
                              prog.calls.size(), table.count));
  std::vector<yoloc_kernel_fn> fns;
  for (size_t i = 0; i < prog.calls.size(); ++i) {
    const KernelCall& c = prog.calls[i];
    const yoloc_kernel_entry& e = table.entries[i];
    const std::string call = fmt::format("call {} ('{}')", i, c.symbol);
    if (!e.name || !e.fn || c.symbol != e.name)
      refuse(where, fmt::format("{} is where the kernel library has '{}'", call,
                                e.name ? e.name : "(nothing)"));
    if (c.work_items != e.work_items)
      refuse(where, fmt::format("{} has {} work items, its kernel {}", call, c.work_items,
                                e.work_items));
    if (c.args.size() != e.n_args || (e.n_args > 0 && (!e.arg_bytes || !e.arg_writes)))
      refuse(where, fmt::format("{} binds {} arguments, its kernel takes {}", call, c.args.size(),
                                e.n_args));
    if (c.params.size() != e.n_params)
      refuse(where, fmt::format("{} passes {} parameters, its kernel reads {}", call,
                                c.params.size(), e.n_params));
    for (size_t k = 0; k < c.args.size(); ++k) {
      const Binding& b = c.args[k];
      if (b.bytes < e.arg_bytes[k])
        refuse(where, fmt::format("{} binds {} bytes of '{}' as argument {}, its kernel touches "
                                  "{}",
                                  call, b.bytes, b.buffer, k, e.arg_bytes[k]));
      if (e.arg_writes[k] && b.buffer != kArena)
        refuse(where, fmt::format("{} binds its output (argument {}) to the read-only blob '{}'",
                                  call, k, b.buffer));
    }
    fns.push_back(e.fn);
  }
  return fns;
}

}  // namespace yoloc::runtime
