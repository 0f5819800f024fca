#pragma once
/// An artifact for the commands that run one (bench, profile): the given .ycm, or an ONNX model
/// compiled for this machine's CPU into a temporary folder.
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "yoloc/compiler.h"

namespace yoloc::tools {

/// An artifact to run: the given .ycm, or an ONNX model compiled for this machine into a
/// temporary folder (removed with the object).
struct PreparedArtifact {
  std::string path;
  double compile_seconds = 0;  ///< 0 when the model was an artifact already
  std::string temp_dir;
  PreparedArtifact() = default;
  PreparedArtifact(PreparedArtifact&& o) noexcept
      : path(std::move(o.path)), compile_seconds(o.compile_seconds), temp_dir(std::exchange(o.temp_dir, {})) {}
  PreparedArtifact& operator=(PreparedArtifact&&) = delete;
  ~PreparedArtifact();
};

/// `model` itself when it is a .ycm, else its compile for target cpu as `options` say (family,
/// imgsz, batch; batch 0: 1). A UserError for --family or --imgsz with an artifact (it was
/// compiled with its own).
PreparedArtifact prepare_artifact(const std::string& model, ModelOptions options);

/// Adds --family and --imgsz (options.family, options.imgsz), as compile takes them, to a
/// command that compiles an ONNX model on the fly.
void add_on_the_fly_options(CLI::App& c, ModelOptions& options);

}  // namespace yoloc::tools
