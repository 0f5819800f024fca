// yoloc eval MODEL --data DIR [--json FILE|-] [--family F] [--imgsz N] [--threads N] [--device N]
//                            [--dump-detections FILE]
//            [--baseline FLOAT.ycm|MODEL.onnx]
#include <fmt/format.h>

#include <cstdio>

#include "detect/eval.h"
#include "detect/pipeline.h"
#include "tools/commands.h"
#include "tools/prepared_artifact.h"
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

/// Python's "%11.3g".
std::string g3(double v) { return fmt::format("{:>11}", fmt::format("{:.3g}", v)); }

/// The table Ultralytics val prints: the classes with ground truth, then every class.
std::string eval_table(const detect::MapResult& r, const std::vector<std::string>& names) {
  std::string out = fmt::format("{:>22}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}\n", "Class", "Images",
                                "Instances", "Box(P", "R", "mAP50", "mAP50-95)");
  out += fmt::format("{:>22}{:>11}{:>11}{}{}{}{}\n", "all", r.images, r.instances,
                     g3(r.precision), g3(r.recall), g3(r.map50), g3(r.map50_95));
  for (const detect::ClassMetrics& c : r.per_class)
    out += fmt::format("{:>22}{:>11}{:>11}{}{}{}{}\n", detect::class_name(names, c.class_id),
                       c.images, c.instances, g3(c.precision), g3(c.recall), g3(c.map50),
                       g3(c.map50_95));
  return out;
}

nlohmann::json eval_json(const detect::MapResult& r, const std::vector<std::string>& names) {
  nlohmann::json classes = nlohmann::json::array();
  for (const detect::ClassMetrics& c : r.per_class)
    classes.push_back({{"class_id", c.class_id},
                       {"class_name", detect::class_name(names, c.class_id)},
                       {"images", c.images},
                       {"instances", c.instances},
                       {"precision", c.precision},
                       {"recall", c.recall},
                       {"map50", c.map50},
                       {"map50_95", c.map50_95}});
  return {{"map50", r.map50},         {"map50_95", r.map50_95}, {"precision", r.precision},
          {"recall", r.recall},       {"images", r.images},     {"instances", r.instances},
          {"classes", classes}};
}

/// map50 and map50_95 of `model` (an ONNX model compiled for this CPU in fp32 first).
nlohmann::json baseline_map(const EvalOptions& o) {
  ModelOptions fp32 = o.model;
  fp32.precision = "fp32";
  const PreparedArtifact a = prepare_artifact(o.baseline, fp32);
  DetectorModelOptions m = o.model;
  m.path = a.path;
  const detect::EvalReport r = load_detector_model(m).evaluate(o.data);
  return {{"model", o.baseline}, {"map50", r.map.map50}, {"map50_95", r.map.map50_95}};
}

void run_eval(EvalOptions o) {
  o.model.conf = detect::kEvalConf;
  o.model.iou = detect::kEvalIou;
  o.model.max_det = detect::kEvalMaxDet;
  const DetectorModel m = load_detector_model(o.model);
  const detect::EvalReport r = m.evaluate(o.data);
  nlohmann::json summary = eval_json(r.map, m.names());
  if (!o.baseline.empty()) {
    summary["baseline"] = baseline_map(o);
    summary["map50_95_drop"] = summary["baseline"]["map50_95"].get<double>() - r.map.map50_95;
  }
  if (!o.dump.empty())
    write_json_file(o.dump, detect::to_json(r.results, m.names()), "--dump-detections");
  if (o.json == "-") {
    // The JSON alone on stdout; the table on stderr.
    std::fputs(eval_table(r.map, m.names()).c_str(), stderr);
    fmt::print("{}\n", summary.dump(2));
    return;
  }
  if (!o.json.empty()) write_json_file(o.json, summary, "--json");
  fmt::print("{}", eval_table(r.map, m.names()));
  if (!o.baseline.empty())
    fmt::print("baseline {}: mAP50-95 {:.4f} (this model {:.4f}, drop {:.4f})\n", o.baseline,
               summary["baseline"]["map50_95"].get<double>(), r.map.map50_95,
               summary["map50_95_drop"].get<double>());
}

}  // namespace

void add_eval(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto* c =
      app.add_subcommand("eval",
                         "Box precision, recall and COCO mAP of a model on a folder with images/ "
                         "and YOLO labels/ (conf 0.001, NMS IoU 0.7, at most 300 boxes per "
                         "image), overall and per class");
  add_detector_model_options(*c, o->model);
  add_artifact_load_options(*c, o->model.load);
  c->add_option("--data", o->data, "dataset folder holding images/ and labels/")->required();
  add_runtime_options(*c, o->model);
  c->add_option("--json", o->json,
                "also write {map50, map50_95, precision, recall, images, instances, classes: "
                "[per class]} to FILE, or to stdout with '-'");
  c->add_option("--baseline", o->baseline,
                "also evaluate this float model (.ycm, or .onnx compiled for this CPU in fp32) "
                "and print its mAP beside (the cost of an int8 artifact)");
  c->add_option("--dump-detections", o->dump,
                "write the evaluated detections as JSON (the `yoloc run --json` format)");
  c->footer(
      "mAP50 and mAP50-95 are COCO's (pycocotools' matching and 101-point AP, averaged over "
      "the classes with labels). P and R are Ultralytics val's: each class's precision and "
      "recall at IoU 0.5, taken at the confidence where the mean F1 over the classes is "
      "highest.");
  c->callback([o] { run_eval(*o); });
}

}  // namespace yoloc::tools
