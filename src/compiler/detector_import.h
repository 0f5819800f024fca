#pragma once
/// The compiler's front door for a detector: an ONNX model imported with its input dims fixed
/// (batch, --imgsz, the export size), its family and class names told from the metadata.
#include <memory>
#include <string>
#include <vector>

#include "detect/pipeline.h"
#include "ir/graph.h"
#include "yoloc/compiler.h"

namespace yoloc::compiler {

/// An imported ONNX detector before optimization: the graph with its input dims fixed, the
/// pipeline configuration and the class names.
struct ImportedDetector {
  std::unique_ptr<Graph> graph;
  detect::DetectorConfig config;
  std::vector<std::string> names;
};

/// Imports the ONNX detector at `path` with batch `options.batch`. Raises a UserError for a
/// model that is not a one-image-input detector, an imgsz that a static model cannot take (or
/// that is not a positive multiple of the stride), a batch that a static model cannot take, or
/// a family that cannot be told (see detect_family).
ImportedDetector import_detector(const std::string& path, const ModelOptions& options);

/// Makes the values named `names` the graph's outputs (and drops what they do not need);
/// raises a UserError naming a value the model `where` lacks.
void select_outputs(Graph& g, const std::vector<std::string>& names, const std::string& where);

/// True when `path` names a compiled artifact (by its .ycm extension).
bool is_artifact_path(const std::string& path);

}  // namespace yoloc::compiler
