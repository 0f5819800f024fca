#include "compiler/int8_accuracy.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>

#include "compiler/compile.h"
#include "compiler/int8_calibration.h"
#include "core/error.h"
#include "detect/eval.h"
#include "yoloc/runtime.h"

namespace yoloc::compiler {

namespace {

namespace fs = std::filesystem;

double map50_95(const CompileOptions& o, const std::string& artifact) {
  return Detector::load(artifact).evaluate(o.int8.validation, /*progress=*/true).map.map50_95;
}

}  // namespace

AccuracyAwareInt8::~AccuracyAwareInt8() {
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

AccuracyAwareInt8::AccuracyAwareInt8(const std::string& model, const CompileOptions& o) {
  if (o.int8.validation.empty())
    user_error("--max-map-drop needs --validation DIR (a dataset folder with images/ and labels/)");
  detect::list_dataset(o.int8.validation);  // a one-line error before any work
  std::string tmpl = (fs::temp_directory_path() / "yoloc-int8-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) user_error("cannot create a temporary folder like {}", tmpl);
  dir_ = tmpl;
  CompileOptions& final = final_;
  final = o;
  final.int8.max_map_drop = 0;
  final.int8.validation.clear();
  quant::Calibration calibration;
  if (o.int8.calibration_file.empty()) {
    Int8Options c = o.int8;
    c.sensitivity_images = 4;
    calibration = calibrate_model(model, o.model, c, /*progress=*/true);
    final.int8.calibration_file = (fs::path(dir_) / "calibration.json").string();
    final.int8.calibration.clear();
    quant::write_calibration(calibration, final.int8.calibration_file);
  } else {
    calibration =
        quant::read_calibration(o.int8.calibration_file, quant::model_digest(model));
  }
  if (calibration.sensitivity.empty())
    user_error("--max-map-drop: the calibration file {} has no sensitivity table; calibrate with "
               "`yoloc calibrate --sensitivity`, or pass --calibration DIR",
               o.int8.calibration_file);
  CompileOptions step = final;
  step.force = true;
  step.sign_key.clear();
  step.emit_source.clear();
  step.model.precision = "fp32";
  step.int8 = {};
  step.output = (fs::path(dir_) / "float.ycm").string();
  compile(model, step, {});
  const double float_map = map50_95(o, step.output);
  const size_t n = calibration.sensitivity.size();
  for (size_t k = 0;; k = k == 0 ? 1 : std::min(2 * k, n)) {
    step = final;
    step.force = true;
    step.sign_key.clear();
    step.emit_source.clear();
    step.output = (fs::path(dir_) / fmt::format("int8-{}.ycm", k)).string();
    for (size_t i = 0; i < k; ++i) step.int8.skip.push_back(calibration.sensitivity[i].conv);
    compile(model, step, {});
    const double q = map50_95(o, step.output);
    fmt::print("  int8 with the {} most sensitive convs in float: mAP50-95 {:.4f} (float {:.4f}, "
               "drop {:.4f})\n",
               k, q, float_map, float_map - q);
    if (float_map - q <= o.int8.max_map_drop || k == n) {
      final.int8.skip = step.int8.skip;
      return;
    }
  }
}

}  // namespace yoloc::compiler
