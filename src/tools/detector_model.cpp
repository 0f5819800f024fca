#include "tools/detector_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <thread>

#include "artifact/artifact_reader.h"
#include "detect/family.h"
#include "runtime/detector_config.h"
#include "runtime/engine.h"
#include "frontend/onnx/importer.h"
#include "ops/reference_executor.h"
#include "passes/pipeline.h"

namespace yoloc::tools {

namespace {

constexpr int kDefaultImgsz = 640;

/// The first output's dims, -1 where not known after import.
Shape output_dims(const Graph& g) {
  Shape s;
  if (g.outputs.empty() || !g.outputs[0]->type.has_rank) return s;
  for (const Dim& d : g.outputs[0]->type.dims) s.push_back(d.known() ? d.value : -1);
  return s;
}

/// Classes in a head output of known shape, -1 when the shape does not say.
int64_t num_classes(detect::Family family, const Shape& out) {
  if (out.size() != 3) return -1;
  switch (family) {
    case detect::Family::kYoloV8: return out[1] > 4 ? out[1] - 4 : -1;
    case detect::Family::kYoloV5:
    case detect::Family::kYoloX: return out[2] > 5 ? out[2] - 5 : -1;
    case detect::Family::kYoloV10: return -1;
  }
  return -1;
}

int metadata_stride(const detect::Metadata& md) {
  auto it = md.find("stride");
  if (it == md.end()) return 32;
  try {
    const int s = std::stoi(it->second);
    return s > 0 && s <= 1024 ? s : 32;
  } catch (const std::exception&) {
    return 32;
  }
}

}  // namespace

ImportedDetector import_detector(const DetectorModelOptions& o) {
  std::unique_ptr<Graph> g = onnx_frontend::import_onnx(o.path);
  if (g->inputs.size() != 1)
    user_error("'{}' has {} inputs; a detector takes one image input (1x3xHxW)", o.path,
               g->inputs.size());
  if (g->outputs.empty()) user_error("'{}' has no outputs", o.path);
  const Value* in = g->inputs[0];
  const TensorType& t = in->type;
  if (!t.has_rank || t.rank() != 4 || (t.dims[1].known() && t.dims[1].value != 3))
    user_error("'{}': the input '{}' is {}; expected an image batch Nx3xHxW", o.path, in->name,
               t.str());
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat16)
    user_error("'{}': the input '{}' has element type {}; expected float32 or float16", o.path,
               in->name, dtype_name(t.dtype));

  // Dynamic H / W take --imgsz, else the export size from the metadata, else 640.
  const int stride = metadata_stride(g->metadata);
  const bool static_hw = t.dims[2].known() && t.dims[3].known();
  if (o.imgsz != 0 && (o.imgsz < 0 || o.imgsz % stride != 0))
    user_error("--imgsz {} must be a positive multiple of the model's stride {}", o.imgsz, stride);
  if (static_hw && o.imgsz != 0 && (t.dims[2].value != o.imgsz || t.dims[3].value != o.imgsz))
    user_error(
        "'{}' has a static input size {}x{} (HxW); it cannot run at --imgsz {}. Omit "
        "--imgsz, or export the model with dynamic height and width",
        o.path, t.dims[2].value, t.dims[3].value, o.imgsz);
  int want_h = kDefaultImgsz, want_w = kDefaultImgsz;
  if (o.imgsz != 0) {
    want_h = want_w = o.imgsz;
  } else if (auto md = detect::metadata_imgsz(g->metadata)) {
    std::tie(want_h, want_w) = *md;
  }
  onnx_frontend::ImportOptions fix;
  auto fix_dim = [&](size_t axis, int64_t value) {
    const Dim& d = t.dims[axis];
    if (d.known()) return;
    fix.fix_dims[d.symbol.empty() ? fmt::format("{}:{}", in->name, axis) : d.symbol] = value;
  };
  if (o.batch < 1) user_error("--batch {} must be >= 1", o.batch);
  if (t.dims[0].known() && t.dims[0].value != o.batch)
    user_error("'{}' has a static batch of {}; it cannot run at --batch {}. Omit --batch, or "
               "export the model with a dynamic batch", o.path, t.dims[0].value, o.batch);
  fix_dim(0, o.batch);
  fix_dim(2, want_h);
  fix_dim(3, want_w);
  if (!fix.fix_dims.empty()) g = onnx_frontend::import_onnx(o.path, fix);

  const TensorType& fixed = g->inputs[0]->type;
  detect::DetectorConfig cfg;
  cfg.input_h = static_cast<int>(fixed.dims[2].value);
  cfg.input_w = static_cast<int>(fixed.dims[3].value);
  cfg.input_dtype = fixed.dtype;
  cfg.conf = o.conf;
  cfg.iou = o.iou;
  cfg.max_det = o.max_det;
  const Shape out = output_dims(*g);
  cfg.family =
      o.family.empty() ? detect::detect_family(g->metadata, out) : detect::parse_family(o.family);

  ImportedDetector d;
  d.names = detect::class_names(g->metadata, num_classes(cfg.family, out));
  d.graph = std::move(g);
  d.config = cfg;
  return d;
}

void select_outputs(Graph& g, const std::vector<std::string>& names, const std::string& where) {
  std::vector<Value*> outs;
  for (const std::string& n : names) {
    Value* v = g.find_value(n);
    if (!v || v->is_constant())
      user_error("--outputs {}: '{}' has no computed value of that name", n, where);
    outs.push_back(v);
  }
  g.outputs = outs;
  g.remove_dead();
}

bool is_artifact_path(const std::string& path) {
  return std::filesystem::path(path).extension() == ".ycm";
}

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
  ImportedDetector d = import_detector(o);
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
