#pragma once
/// `yoloc inspect MODEL.ycm`: what a compiled artifact holds.
#include <string>

namespace yoloc::tools {

/// Prints the artifact's manifest summary (target, precision, tensors, classes, blobs, kernels
/// by template, arena bytes vs the naive sum of the intermediates), or the manifest as JSON.
void inspect_artifact(const std::string& path, bool json);

}  // namespace yoloc::tools
