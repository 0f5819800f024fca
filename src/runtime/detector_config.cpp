#include "runtime/detector_config.h"

#include "detect/family.h"
#include "core/error.h"

namespace yoloc::runtime {
namespace {

/// A number from the manifest's postprocess object, or nullopt when absent or not a number.
std::optional<double> manifest_number(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

/// The pre-processing the manifest names ("letterbox" or "yolox"); it must be the family's.
void check_preprocess(const artifact::Manifest& m, detect::Family family,
                      const std::string& where) {
  auto it = m.preprocess.find("kind");
  if (it == m.preprocess.end()) return;
  const std::string expected = family == detect::Family::kYoloX ? "yolox" : "letterbox";
  if (!it->is_string() || it->get<std::string>() != expected)
    user_error(
        "artifact '{}': preprocess.kind is {}, but family '{}' uses '{}'; recompile the "
        "model",
        where, it->dump(), m.family, expected);
}

}  // namespace

std::optional<detect::DetectorConfig> manifest_detector_config(const artifact::Manifest& m,
                                                               const DetectorOverrides& overrides,
                                                               const std::string& where,
                                                               std::string* why_not) {
  if (m.family.empty()) {
    *why_not = "it names no detector family";
    return std::nullopt;
  }
  if (m.inputs.size() != 1 || m.inputs[0].shape.size() != 4 || m.inputs[0].shape[0] < 1 ||
      m.inputs[0].shape[1] != 3) {
    *why_not = "its input is not one Nx3xHxW batch of images";
    return std::nullopt;
  }
  const detect::Family family = detect::parse_family(m.family);
  check_preprocess(m, family, where);
  detect::DetectorConfig cfg;
  cfg.family = family;
  cfg.input_h = static_cast<int>(m.inputs[0].shape[2]);
  cfg.input_w = static_cast<int>(m.inputs[0].shape[3]);
  cfg.input_dtype = dtype_from_name(m.inputs[0].dtype);
  cfg.batch = static_cast<int>(m.inputs[0].shape[0]);
  cfg.conf = overrides.conf.value_or(
      static_cast<float>(manifest_number(m.postprocess, "conf").value_or(cfg.conf)));
  cfg.iou = overrides.iou.value_or(
      static_cast<float>(manifest_number(m.postprocess, "iou").value_or(cfg.iou)));
  cfg.max_det = overrides.max_det.value_or(
      static_cast<int>(manifest_number(m.postprocess, "max_det").value_or(cfg.max_det)));
  return cfg;
}

}  // namespace yoloc::runtime
