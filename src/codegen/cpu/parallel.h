#pragma once
/// The thread pool lives in the runtime (generated kernels run there); the compiler's benchmarks
/// and tests use the same one.
#include "runtime/thread_pool.h"

namespace yoloc::codegen::cpu {
using runtime::ThreadPool;
}  // namespace yoloc::codegen::cpu
