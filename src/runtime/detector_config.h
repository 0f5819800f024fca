#pragma once
/// The detection pipeline an artifact's manifest describes: family, input size, thresholds. The
/// runtime's Detector and the `yoloc` commands that run artifacts build their pipeline from it.
#include <optional>
#include <string>

#include "artifact/manifest.h"
#include "detect/pipeline.h"

namespace yoloc::runtime {

/// Thresholds that override the manifest's (which override the pipeline's defaults).
struct DetectorOverrides {
  std::optional<float> conf;
  std::optional<float> iou;
  std::optional<int> max_det;
};

/// The pipeline configuration of a detector artifact; nullopt, with the reason in `why_not`,
/// for an artifact that is not a detector of one Nx3xHxW image input. Raises a UserError naming `where`
/// for a manifest whose pre-processing contradicts its family.
std::optional<detect::DetectorConfig> manifest_detector_config(const artifact::Manifest& m,
                                                               const DetectorOverrides& overrides,
                                                               const std::string& where,
                                                               std::string* why_not);

}  // namespace yoloc::runtime
