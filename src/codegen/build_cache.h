#pragma once
/// The kernel build cache, as the compiler's code generators name it (core/build_cache.h).
#include "core/build_cache.h"

namespace yoloc::codegen {
using yoloc::build_key;
using yoloc::BuildCache;
}  // namespace yoloc::codegen
