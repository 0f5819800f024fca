#pragma once
/// The inputs `bench` and `profile` time a network on: random values in [0, 1) for each input of
/// an artifact's manifest, in the input's own type (float32, float16, bfloat16), the same every
/// call (seed 0).
#include <vector>

#include "artifact/manifest.h"
#include "yoloc/tensor.h"

namespace yoloc::tools {

/// Raises a UserError naming `command` for an input of another type (integer inputs).
std::vector<Tensor> random_inputs(const artifact::Manifest& m, const char* command);

}  // namespace yoloc::tools
