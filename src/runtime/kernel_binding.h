#pragma once
/// Ties a CPU program's calls (program.h) to the kernel table its library exports
/// (include/yoloc/kernel_abi.h), so that a manifest edited after compilation cannot call
/// anything the library does not declare for that place, nor bind a kernel to fewer bytes than
/// it touches, nor let it write into a read-only blob.
#include <string>
#include <vector>

#include "runtime/program.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::runtime {

/// The function of each of prog's calls, in order. Raises a one-line UserError naming `where`
/// and the first call that differs from `table` in count, order, symbol, work items, argument
/// or parameter count, whose binding is shorter than the bytes the kernel declares for it, or
/// that writes through a binding outside the arena.
std::vector<yoloc_kernel_fn> bind_kernel_table(const Program& prog, const yoloc_kernel_table& table,
                                               const std::string& where);

}  // namespace yoloc::runtime
