// yoloc calibrate MODEL.onnx --calibration DIR [--calibration-images N]
//                 [--calibration-method entropy|percentile|minmax|mse] [--int8-skip PATTERN...]
//                 [--sensitivity [--sensitivity-images N]] [--imgsz N] [--force] -o CALIB.json
#include <fmt/format.h>

#include <filesystem>

#include "tools/commands.h"
#include "compiler/int8_calibration.h"
#include "tools/detector_model.h"
#include "tools/int8_options.h"

namespace yoloc::tools {

namespace {

struct CalibrateOptions {
  DetectorModelOptions model;
  Int8Options int8;
  std::string output;
  bool force = false;
  bool sensitivity = false;
  int sensitivity_images = 4;
};

void print_calibration(const quant::Calibration& c) {
  int int8 = 0;
  fmt::print("{:<44} {:<10} {:>10} {:>10} {:>10} {:>5}\n", "conv", "precision", "min", "max",
             "scale", "zp");
  for (const quant::ConvChoice& k : c.convs) {
    if (!k.float_reason.empty()) {
      fmt::print("{:<44} float      ({})\n", k.conv, k.float_reason);
      continue;
    }
    ++int8;
    const quant::TensorStats& s = c.tensors.at(k.input);
    const quant::ActivationQuant q = quant::activation_quant(s.histogram, c.method);
    fmt::print("{:<44} {:<10} {:>10.4g} {:>10.4g} {:>10.4g} {:>5}\n", k.conv, "int8",
               s.histogram.min(), s.histogram.max(), q.scale, q.zero_point);
  }
  fmt::print("{} of {} convs int8 ({} scales), calibrated on {} images of {}\n", int8,
             c.convs.size(), quant::method_name(c.method), c.images, c.folder);
  if (c.sensitivity.empty()) return;
  fmt::print("\nsensitivity: the outputs' relative L2 error with one conv alone in int8\n");
  fmt::print("{:>4} {:<44} {:>10}\n", "rank", "conv", "error");
  for (size_t i = 0; i < c.sensitivity.size(); ++i)
    fmt::print("{:>4} {:<44} {:>10.3e}\n", i + 1, c.sensitivity[i].conv, c.sensitivity[i].error);
}

void run_calibrate(const CalibrateOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(o.output, ec)) {
    if (fs::equivalent(o.output, o.model.path, ec))
      user_error("-o {} is the model itself; choose another output file", o.output);
    if (!o.force) user_error("-o {}: the file exists; pass --force to overwrite it", o.output);
  }
  Int8Options int8 = o.int8;
  int8.sensitivity_images = o.sensitivity ? o.sensitivity_images : 0;
  const quant::Calibration c = compiler::calibrate_model(o.model.path, o.model, int8, /*progress=*/true);
  print_calibration(c);
  quant::write_calibration(c, o.output);
  fmt::print("wrote {}\n", o.output);
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* c = app.add_subcommand(
      "calibrate",
      "Calibrate an ONNX detector for int8 (activation ranges over images) and keep the result "
      "for `compile --precision int8 --calibration-file`");
  add_detector_model_options(*c, o->model);
  add_int8_options(*c, o->int8, /*compile=*/false);
  c->get_option("--calibration")->required();
  c->add_flag("--sensitivity", o->sensitivity,
              "also measure each int8 conv's output error when it alone is int8 (reference "
              "executor, on the first --sensitivity-images calibration images) and print the "
              "table");
  c->add_option("--sensitivity-images", o->sensitivity_images,
                "images of the sensitivity measurement")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("-o,--output", o->output, "the calibration file to write (JSON)")->required();
  c->add_flag("--force", o->force, "overwrite the output file if it exists");
  c->callback([o] { run_calibrate(*o); });
}

}  // namespace yoloc::tools
