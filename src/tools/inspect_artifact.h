#pragma once
/// `yoloc inspect MODEL.ycm`: what a compiled artifact holds.
#include <string>

#include "tools/artifact_options.h"

namespace yoloc::tools {

/// Prints the artifact's manifest summary (target, precision, tensors, classes, blobs, kernels
/// by template, arena bytes vs the naive sum of the intermediates, the signature: "unsigned",
/// "signed, not verified" or "verified with KEY"); with `json`, the manifest as JSON to that
/// file ('-': to stdout, instead of the text). The artifact is opened under `load`'s trust
/// policy, as every command opens it.
void inspect_artifact(const std::string& path, const std::string& json,
                      const ArtifactLoadOptions& load);

}  // namespace yoloc::tools
