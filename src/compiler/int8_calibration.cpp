#include "compiler/int8_calibration.h"

#include "quant/calibration_images.h"
#include "quant/int8_plan.h"
#include "quant/sensitivity.h"
#include "targets/target.h"

namespace yoloc::compiler {

quant::Calibration calibrate_model(const std::string& path, const ModelOptions& model,
                                   const Int8Options& o, bool progress) {
  if (o.calibration.empty())
    user_error("int8 needs calibration images: pass --calibration DIR (or --calibration-file)");
  const std::vector<std::string> images = quant::list_calibration_images(o.calibration, o.images);
  quant::Calibration c;
  c.model_digest = quant::model_digest(path);
  c.model = path;
  c.folder = o.calibration;
  c.images = static_cast<int>(images.size());
  c.method = o.method.empty() ? quant::Method::kMse : quant::parse_method(o.method);
  ModelOptions float_model = model;
  float_model.precision = "fp32";
  const ImportedDetector d = targets::find_target("cpu").import_model(path, float_model, {});
  c.input_w = d.config.input_w;
  c.input_h = d.config.input_h;
  c.convs = quant::choose_int8_convs(*d.graph, o.skip);
  std::vector<std::string> inputs;
  for (const quant::ConvChoice& k : c.convs)
    if (k.float_reason.empty()) inputs.push_back(k.input);
  if (inputs.empty())
    user_error("'{}': no convolution the quantizer can run in int8 (the stem, the head's last "
               "convs and --int8-skip stay float); compile it with --precision fp32",
               path);
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

Int8Plan int8_plan(const std::string& path, const ModelOptions& model, const Int8Options& o) {
  quant::Calibration c =
      o.calibration_file.empty()
          ? calibrate_model(path, model, o, /*progress=*/true)
          : quant::read_calibration(o.calibration_file, quant::model_digest(path));
  quant::PlanOptions p;
  p.method = o.method.empty() ? c.method : quant::parse_method(o.method);
  p.skip = o.skip;
  p.bias_correction = !o.no_bias_correction;
  return quant::make_int8_plan(c, p);
}

}  // namespace yoloc::compiler
