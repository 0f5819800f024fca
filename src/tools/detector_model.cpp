#include "tools/detector_model.h"

#include <fmt/format.h>

#include <thread>

#include "detect/eval.h"
#include "detect/family.h"
#include "ops/reference_executor.h"
#include "passes/pipeline.h"

namespace yoloc::tools {

DetectorModel::DetectorModel(std::optional<yoloc::Detector> artifact,
                             std::unique_ptr<detect::Detector> reference,
                             std::vector<std::string> names)
    : artifact_(std::move(artifact)), reference_(std::move(reference)), names_(std::move(names)) {
  if (artifact_) {
    batch_ = artifact_->batch();
    const std::vector<int64_t> shape = artifact_->inputs().at(0).shape;  // N x 3 x H x W
    input_h_ = static_cast<int>(shape.at(2));
    input_w_ = static_cast<int>(shape.at(3));
  } else {
    batch_ = reference_->config().batch;
    input_h_ = reference_->config().input_h;
    input_w_ = reference_->config().input_w;
  }
}

std::vector<std::vector<detect::Detection>> DetectorModel::detect(
    const std::vector<detect::Image>& images, detect::StageTimes* times) const {
  if (!artifact_) return reference_->detect(images, times);
  DetectTimings t;
  std::vector<std::vector<detect::Detection>> out = artifact_->detect(images, {}, &t);
  if (times) *times = {t.preprocess_ms, t.inference_ms, t.postprocess_ms};
  return out;
}

detect::EvalReport DetectorModel::evaluate(const std::string& dir) const {
  if (artifact_) return artifact_->evaluate(dir, /*progress=*/true);
  return detect::evaluate_dataset(*reference_, dir, /*progress=*/true);
}

DetectorModel load_detector_model(const DetectorModelOptions& o) {
  if (is_artifact_path(o.path)) {
    DetectorOptions d;
    d.threads = o.threads;
    d.device = o.device;
    // The command's thresholds (run's defaults equal what compile stores; eval's are fixed).
    d.conf = o.conf;
    d.iou = o.iou;
    d.max_det = o.max_det;
    d.trusted_keys = o.load.trust;
    d.max_memory = max_memory_bytes(o.load);
    yoloc::Detector det = yoloc::Detector::load(o.path, d);
    if (!det.not_detector_reason().empty())
      user_error("'{}' is not a detector artifact: {}", o.path, det.not_detector_reason());
    if (!o.family.empty() && detect::parse_family(o.family) != detect::parse_family(det.family()))
      user_error("--family {}: the artifact '{}' was compiled as {}; omit --family", o.family,
                 o.path, det.family());
    const std::vector<int64_t> shape = det.inputs().at(0).shape;
    if (o.imgsz != 0 && (o.imgsz != shape.at(2) || o.imgsz != shape.at(3)))
      user_error("--imgsz {}: the artifact '{}' was compiled for {}x{}; recompile it", o.imgsz,
                 o.path, shape.at(2), shape.at(3));
    std::vector<std::string> names = det.class_names();
    return DetectorModel(std::move(det), nullptr, std::move(names));
  }
  ImportedDetector d = compiler::import_detector(o.path, o);
  // The graph optimizer at its default level: bit-identical outputs (tests/e2e/check_optimized.py)
  // with fewer nodes to run.
  PassContext passes;
  if (o.precision == "fp32") {
    passes.precision = Precision::kFp32;
  } else if (o.precision != "auto") {
    user_error("--precision {}: choose auto (as the model says) or fp32", o.precision);
  }
  optimize(*d.graph, passes);
  std::shared_ptr<const Graph> graph(std::move(d.graph));
  const std::string input_name = graph->inputs[0]->name;
  auto network = [graph, input_name](const Tensor& x) {
    std::vector<Tensor> outputs;
    for (NamedTensor& nt : run_reference(*graph, {{input_name, x}}))
      outputs.push_back(std::move(nt.tensor));
    return outputs;
  };
  return DetectorModel(std::nullopt, std::make_unique<detect::Detector>(network, d.config),
                       std::move(d.names));
}

void add_detector_model_options(CLI::App& c, DetectorModelOptions& options) {
  c.add_option("model", options.path, "ONNX model or compiled .ycm artifact")->required();
  c.add_option("--imgsz", options.imgsz,
               "input size for models with dynamic height/width (default: the export size, else "
               "640)");
  c.add_option("--precision", options.precision,
               "ONNX models: auto (compute as the model says) or fp32 (quantized layers in float, "
               "as compile does)")
      ->capture_default_str();
  c.add_option("--family", options.family,
               "model family when the model does not say: yolov5, yolov8, yolo11, yolov10, yolox");
}

void add_runtime_options(CLI::App& c, DetectorModelOptions& options) {
  c.add_option("--threads", options.threads,
               "worker threads running an artifact (default: the machine's hardware threads)")
      ->check(CLI::NonNegativeNumber);
  c.add_option("--device", options.device, "GPU running a CUDA artifact")
      ->check(CLI::NonNegativeNumber);
}

void add_io_precision_option(CLI::App& c, DetectorModelOptions& options) {
  c.add_option("--io-precision", options.io_precision,
               "cuda: the type of the network's inputs and outputs: fp32 (default) or the "
               "--precision's own type (fp16, bf16), as the PyTorch peer and TensorRT's fp16 I/O "
               "formats take them: the image is read and the output written at half the bytes")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
}

void add_lanes_option(CLI::App& c, DetectorModelOptions& options) {
  c.add_option("--lanes", options.lanes,
               "cuda: split the batch into N lanes that run at once, each with the kernels and "
               "arena of batch/N (one lane's kernels may fill the GPU where another's leave it "
               "idle; default 1: on an H200, yolov8n at batch 128 ran faster in one lane)");
}

}  // namespace yoloc::tools
