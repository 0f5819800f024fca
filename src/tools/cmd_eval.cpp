// yoloc eval MODEL --data DIR [--json FILE] [--family F] [--imgsz N] [--dump-detections FILE]
//            [--baseline FLOAT.ycm|MODEL.onnx]
#include <fmt/format.h>

#include "detect/eval.h"
#include "tools/commands.h"
#include "tools/compile_model.h"
#include "tools/detector_model.h"

namespace yoloc::tools {

namespace {

struct EvalOptions {
  DetectorModelOptions model;
  std::string data;
  std::string json;
  std::string dump;
  std::string baseline;
};

/// map50 and map50_95 of `model` (an ONNX model compiled for this CPU in fp32 first).
nlohmann::json baseline_map(const EvalOptions& o) {
  const PreparedArtifact a = prepare_artifact(o.baseline, 1);
  DetectorModelOptions m = o.model;
  m.path = a.path;
  const DetectorModel d = load_detector_model(m);
  const detect::EvalReport r = detect::evaluate_dataset(*d.detector, o.data, /*progress=*/true);
  return {{"model", o.baseline}, {"map50", r.map.map50}, {"map50_95", r.map.map50_95}};
}

void run_eval(EvalOptions o) {
  o.model.conf = detect::kEvalConf;
  o.model.iou = detect::kEvalIou;
  o.model.max_det = detect::kEvalMaxDet;
  const DetectorModel m = load_detector_model(o.model);
  const detect::EvalReport r = detect::evaluate_dataset(*m.detector, o.data, /*progress=*/true);
  nlohmann::json summary = {
      {"map50", r.map.map50}, {"map50_95", r.map.map50_95}, {"images", r.results.size()}};
  if (!o.baseline.empty()) {
    summary["baseline"] = baseline_map(o);
    summary["map50_95_drop"] = summary["baseline"]["map50_95"].get<double>() - r.map.map50_95;
  }
  if (!o.json.empty()) write_json_file(o.json, summary, "--json");
  if (!o.dump.empty())
    write_json_file(o.dump, detect::to_json(r.results, m.names), "--dump-detections");
  fmt::print("{}\n", summary.dump());
}

}  // namespace

void add_eval(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto* c =
      app.add_subcommand("eval",
                         "COCO-style box mAP of a model on a folder with images/ and YOLO labels/ "
                         "(conf 0.001, NMS IoU 0.7, at most 300 boxes per image)");
  add_detector_model_options(*c, o->model);
  c->add_option("--data", o->data, "dataset folder holding images/ and labels/")->required();
  c->add_option("--device", o->model.device, "GPU running a CUDA artifact")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--baseline", o->baseline,
                "also evaluate this float model (.ycm, or .onnx compiled for this CPU in fp32) "
                "and print its mAP beside (the cost of an int8 artifact)");
  c->add_option("--json", o->json, "also write {map50, map50_95, images} to FILE");
  c->add_option("--dump-detections", o->dump,
                "write the evaluated detections as JSON (the `yoloc run --json` format)");
  c->callback([o] { run_eval(*o); });
}

}  // namespace yoloc::tools
