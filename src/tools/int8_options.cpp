#include "tools/int8_options.h"

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

}  // namespace yoloc::tools
