#include "tools/int8_calibration.h"

#include "quant/calibration_images.h"
#include "quant/int8_plan.h"
#include "quant/sensitivity.h"
#include "tools/compile_model.h"

namespace yoloc::tools {

void add_int8_options(CLI::App& c, Int8Options& o, bool compile) {
  c.add_option("--calibration", o.calibration,
               "int8: folder of calibration images (or a dataset folder with images/), "
               "pre-processed as the model's detector does");
  if (compile)
    c.add_option("--calibration-file", o.calibration_file,
                 "int8: the calibration `yoloc calibrate -o` wrote for this model")
        ->excludes(c.get_option("--calibration"));
  c.add_option("--calibration-images", o.images,
               "int8: calibrate on the first N images of the folder by name")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c.add_option("--calibration-method", o.method,
               "int8: activation ranges by mse (least squared error, the default: the most "
               "accurate on yolov5n and yolox-nano), entropy (TensorRT's KL divergence), "
               "percentile (99.99) or minmax")
      ->check(CLI::IsMember({"entropy", "percentile", "minmax", "mse"}));
  c.add_option("--int8-skip", o.skip,
               "int8: keep the convs whose output or node name matches these wildcards in float "
               "(e.g. '*model.22*')");
  if (compile) {
    c.add_option("--max-map-drop", o.max_map_drop,
                 "int8: keep the most sensitive convs in float until the mAP50-95 on --validation "
                 "is within this of the float artifact's (e.g. 0.01)")
        ->check(CLI::PositiveNumber);
    c.add_option("--validation", o.validation,
                 "int8: the dataset folder (images/, labels/) of --max-map-drop");
  }
  if (compile)
    c.add_flag("--no-bias-correction", o.no_bias_correction,
               "int8: leave the biases as they are (no correction of the rounded weights' mean "
               "error)");
}

quant::Calibration calibrate_model(const DetectorModelOptions& model, const Int8Options& o,
                                   bool progress) {
  if (o.calibration.empty())
    user_error("int8 needs calibration images: pass --calibration DIR (or --calibration-file)");
  const std::vector<std::string> images = quant::list_calibration_images(o.calibration, o.images);
  quant::Calibration c;
  c.model_digest = quant::model_digest(model.path);
  c.model = model.path;
  c.folder = o.calibration;
  c.images = static_cast<int>(images.size());
  c.method = o.method.empty() ? quant::Method::kMse : quant::parse_method(o.method);
  const ImportedDetector d = import_for_cpu(model);
  c.input_w = d.config.input_w;
  c.input_h = d.config.input_h;
  c.convs = quant::choose_int8_convs(*d.graph, o.skip);
  std::vector<std::string> inputs;
  for (const quant::ConvChoice& k : c.convs)
    if (k.float_reason.empty()) inputs.push_back(k.input);
  if (inputs.empty())
    user_error("'{}': no convolution the quantizer can run in int8 (the stem, the head's last "
               "convs and --int8-skip stay float); compile it with --precision fp32",
               model.path);
  c.tensors = quant::collect_statistics(*d.graph, d.config, images, inputs, progress);
  if (o.sensitivity_images > 0) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < images.size() && static_cast<int>(i) < o.sensitivity_images; ++i)
      xs.push_back(quant::calibration_input(images[i], d.config, d.graph->inputs[0]->type.dtype));
    quant::PlanOptions p;
    p.method = c.method;
    p.bias_correction = !o.no_bias_correction;
    c.sensitivity = quant::measure_sensitivity(*d.graph, quant::make_int8_plan(c, p), xs, progress);
  }
  return c;
}

Int8Plan int8_plan(const DetectorModelOptions& model, const Int8Options& o) {
  quant::Calibration c =
      o.calibration_file.empty()
          ? calibrate_model(model, o, /*progress=*/true)
          : quant::read_calibration(o.calibration_file, quant::model_digest(model.path));
  quant::PlanOptions p;
  p.method = o.method.empty() ? c.method : quant::parse_method(o.method);
  p.skip = o.skip;
  p.bias_correction = !o.no_bias_correction;
  return quant::make_int8_plan(c, p);
}

}  // namespace yoloc::tools
