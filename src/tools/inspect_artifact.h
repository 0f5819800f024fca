#pragma once
/// `yoloc inspect MODEL.ycm`: what a compiled artifact holds.
#include <string>

namespace yoloc::tools {

/// Prints the artifact's manifest summary (target, precision, tensors, classes, blobs, kernels
/// by template, arena bytes vs the naive sum of the intermediates); with `json`, the manifest
/// as JSON to that file ('-': to stdout, instead of the text).
void inspect_artifact(const std::string& path, const std::string& json);

}  // namespace yoloc::tools
