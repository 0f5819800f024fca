#include "tools/detector_model.h"

#include <fmt/format.h>

#include <thread>

#include "artifact/artifact_reader.h"
#include "detect/family.h"
#include "runtime/detector_config.h"
#include "runtime/engine.h"
#include "ops/reference_executor.h"
#include "passes/pipeline.h"

namespace yoloc::tools {

DetectorModel load_detector_model(const DetectorModelOptions& o) {
  DetectorModel m;
  if (is_artifact_path(o.path)) {
    // The command's thresholds (run's defaults equal what compile stores; eval's are fixed).
    const runtime::DetectorOverrides overrides{o.conf, o.iou, o.max_det};
    auto art = open_trusted_artifact(o.path, o.load);
    std::string why_not;
    auto cfg = runtime::manifest_detector_config(art->manifest(), overrides, o.path, &why_not);
    if (!cfg) user_error("'{}' is not a detector artifact: {}", o.path, why_not);
    if (!o.family.empty() && detect::parse_family(o.family) != cfg->family)
      user_error("--family {}: the artifact '{}' was compiled as {}; omit --family", o.family,
                 o.path, art->manifest().family);
    if (o.imgsz != 0 && (o.imgsz != cfg->input_h || o.imgsz != cfg->input_w))
      user_error("--imgsz {}: the artifact '{}' was compiled for {}x{}; recompile it", o.imgsz,
                 o.path, cfg->input_h, cfg->input_w);
    std::shared_ptr<runtime::Engine> engine =
        runtime::Engine::open(art, engine_options(o.load, o.threads, o.device));
    m.names = art->manifest().class_names;
    m.engine = engine;
    auto network = [engine](const Tensor& x) { return engine->run({x}); };
    if (engine->detects()) {
      const detect::DetectorConfig c = *cfg;
      m.detector = std::make_unique<detect::Detector>(
          network,
          [engine, c](const detect::Image& img) {
            return engine->detect(img, c.conf, c.iou, c.max_det);
          },
          c);
    } else {
      m.detector = std::make_unique<detect::Detector>(network, *cfg);
    }
    return m;
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
  m.names = std::move(d.names);
  std::shared_ptr<const Graph> graph(std::move(d.graph));
  m.graph = graph;
  const std::string input_name = graph->inputs[0]->name;
  auto network = [graph, input_name](const Tensor& x) {
    std::vector<Tensor> outputs;
    for (NamedTensor& nt : run_reference(*graph, {{input_name, x}}))
      outputs.push_back(std::move(nt.tensor));
    return outputs;
  };
  m.detector = std::make_unique<detect::Detector>(network, d.config);
  return m;
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
