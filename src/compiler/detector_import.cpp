#include "compiler/detector_import.h"

#include <fmt/format.h>

#include <filesystem>

#include "detect/family.h"
#include "frontend/onnx/importer.h"

namespace yoloc::compiler {

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

ImportedDetector import_detector(const std::string& path, const ModelOptions& o) {
  std::unique_ptr<Graph> g = onnx_frontend::import_onnx(path);
  if (g->inputs.size() != 1)
    user_error("'{}' has {} inputs; a detector takes one image input (1x3xHxW)", path,
               g->inputs.size());
  if (g->outputs.empty()) user_error("'{}' has no outputs", path);
  const Value* in = g->inputs[0];
  const TensorType& t = in->type;
  if (!t.has_rank || t.rank() != 4 || (t.dims[1].known() && t.dims[1].value != 3))
    user_error("'{}': the input '{}' is {}; expected an image batch Nx3xHxW", path, in->name,
               t.str());
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat16)
    user_error("'{}': the input '{}' has element type {}; expected float32 or float16", path,
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
        path, t.dims[2].value, t.dims[3].value, o.imgsz);
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
               "export the model with a dynamic batch", path, t.dims[0].value, o.batch);
  fix_dim(0, o.batch);
  fix_dim(2, want_h);
  fix_dim(3, want_w);
  if (!fix.fix_dims.empty()) g = onnx_frontend::import_onnx(path, fix);

  const TensorType& fixed = g->inputs[0]->type;
  detect::DetectorConfig cfg;
  cfg.input_h = static_cast<int>(fixed.dims[2].value);
  cfg.input_w = static_cast<int>(fixed.dims[3].value);
  cfg.input_dtype = fixed.dtype;
  cfg.conf = o.conf;
  cfg.iou = o.iou;
  cfg.max_det = o.max_det;
  const Shape out = output_dims(*g);
  if (!o.family.empty())
    cfg.family = detect::parse_family(o.family);
  else if (o.family_needed)
    cfg.family = detect::detect_family(g->metadata, out);
  else
    cfg.family = detect::try_detect_family(g->metadata, out).value_or(cfg.family);

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

}  // namespace yoloc::compiler
