#pragma once
/// The kernel table a CPU kernel library exports (include/yoloc/kernel_abi.h): the C++ source
/// appended to the generated kernels that declares, for every call of the program in order, its
/// wrapper, work items, parameter count and the bytes and direction of each binding.
#include <string>
#include <vector>

#include "artifact/program.h"

namespace yoloc::codegen::cpu {

/// The table's source for `prog`'s calls, each calling the wrapper its symbol names;
/// writes[i][k] is true where call i writes through binding k.
std::string kernel_table_source(const artifact::Program& prog,
                                const std::vector<std::vector<bool>>& writes);

}  // namespace yoloc::codegen::cpu
