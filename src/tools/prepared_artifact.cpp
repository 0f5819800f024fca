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

PreparedArtifact prepare_artifact(const std::string& model, ModelOptions options) {
  PreparedArtifact p;
  if (compiler::is_artifact_path(model)) {
    if (!options.family.empty() || options.imgsz != 0)
      user_error("--family and --imgsz apply to ONNX models; the artifact '{}' was compiled with "
                 "its own: omit them, or recompile it",
                 model);
    p.path = model;
    return p;
  }
  std::string tmpl = (fs::temp_directory_path() / "yoloc-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) user_error("cannot create a temporary folder like {}", tmpl);
  p.temp_dir = tmpl;
  CompileOptions c;
  if (options.batch <= 0) options.batch = 1;
  c.model = options;
  c.output = (fs::path(tmpl) / "model.ycm").string();
  p.compile_seconds = compile(model, c).seconds;
  p.path = c.output;
  return p;
}

void add_on_the_fly_options(CLI::App& c, ModelOptions& options) {
  c.add_option("--family", options.family,
               "ONNX models: the family when the model does not say: yolov5, yolov8, yolo11, "
               "yolov10, yolox");
  c.add_option("--imgsz", options.imgsz,
               "ONNX models: input size for models with dynamic height/width (default: the "
               "export size, else 640)");
}

}  // namespace yoloc::tools
