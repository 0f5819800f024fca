#include "tools/prepared_artifact.h"

#include <stdlib.h>

#include <filesystem>

#include "compiler/detector_import.h"
#include "core/error.h"
#include "yoloc/compiler.h"

namespace yoloc::tools {

namespace fs = std::filesystem;

PreparedArtifact::~PreparedArtifact() {
  if (temp_dir.empty()) return;
  std::error_code ec;
  fs::remove_all(temp_dir, ec);
}

PreparedArtifact prepare_artifact(const std::string& model, int batch) {
  PreparedArtifact p;
  if (compiler::is_artifact_path(model)) {
    p.path = model;
    return p;
  }
  std::string tmpl = (fs::temp_directory_path() / "yoloc-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) user_error("cannot create a temporary folder like {}", tmpl);
  p.temp_dir = tmpl;
  CompileOptions c;
  c.model.batch = batch > 0 ? batch : 1;
  c.output = (fs::path(tmpl) / "model.ycm").string();
  p.compile_seconds = compile(model, c).seconds;
  p.path = c.output;
  return p;
}

}  // namespace yoloc::tools
