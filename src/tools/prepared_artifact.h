#pragma once
/// An artifact for the commands that run one (bench, profile): the given .ycm, or an ONNX model
/// compiled for this machine's CPU into a temporary folder.
#include <string>
#include <utility>

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

/// `model` itself when it is a .ycm, else its compile for target cpu at `batch` (0: 1).
PreparedArtifact prepare_artifact(const std::string& model, int batch);

}  // namespace yoloc::tools
