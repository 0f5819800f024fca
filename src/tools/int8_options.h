#pragma once
/// The int8 options `yoloc calibrate` and `yoloc compile --precision int8` share
/// (yoloc::Int8Options, include/yoloc/compiler.h).
#include <CLI/CLI.hpp>

#include "yoloc/compiler.h"

namespace yoloc::tools {

/// --calibration, --calibration-images, --calibration-method, --int8-skip; with `compile`
/// also --calibration-file, --max-map-drop, --validation and --no-bias-correction.
void add_int8_options(CLI::App& c, Int8Options& o, bool compile);

}  // namespace yoloc::tools
