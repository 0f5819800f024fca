// yoloc run MODEL IMAGE... [--conf] [--iou] [--imgsz] [--family] [--json FILE|-] [--draw DIR]
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>

#include "detect/draw.h"
#include "detect/result.h"
#include "tools/commands.h"
#include "tools/detector_model.h"

namespace yoloc::tools {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
  DetectorModelOptions model;
  std::vector<std::string> images;
  std::string json;
  std::string draw_dir;
};

/// DIR/<image name>, as PNG unless the image is a JPEG or PNG already.
fs::path drawn_path(const fs::path& dir, const std::string& image) {
  fs::path name = fs::path(image).filename();
  std::string ext = name.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".png" && ext != ".jpg" && ext != ".jpeg") name.replace_extension(".png");
  return dir / name;
}

/// The annotated-image path of every input; refuses to overwrite an input or to write two
/// images to one path.
std::vector<fs::path> plan_drawn_paths(const RunOptions& o) {
  std::vector<fs::path> out;
  std::map<fs::path, std::string> taken;
  for (const std::string& image : o.images) {
    const fs::path p = drawn_path(o.draw_dir, image);
    for (const std::string& input : o.images) {
      std::error_code ec;
      if (fs::equivalent(p, input, ec))
        user_error(
            "--draw {}: the annotated image '{}' would overwrite the input image '{}'; "
            "choose another --draw folder",
            o.draw_dir, p.string(), input);
    }
    auto [it, fresh] = taken.emplace(p.lexically_normal(), image);
    if (!fresh)
      user_error(
          "--draw {}: the inputs '{}' and '{}' would both be drawn to '{}'; run them "
          "separately or rename one",
          o.draw_dir, it->second, image, p.string());
    out.push_back(p);
  }
  return out;
}

void print_summary(const std::vector<detect::ImageResult>& results,
                   const std::vector<std::string>& names) {
  for (const detect::ImageResult& r : results) {
    std::map<std::string, int> counts;
    for (const detect::Detection& d : r.detections) ++counts[detect::class_name(names, d.class_id)];
    std::string what;
    for (const auto& [name, n] : counts)
      what += fmt::format("{}{} {}", what.empty() ? "" : ", ", n, name);
    fmt::print("{} ({}x{}): {}\n", r.image, r.width, r.height,
               r.detections.empty() ? "no detections" : what);
    for (const detect::Detection& d : r.detections)
      fmt::print("  {:<16} {:.3f}  [{:.1f}, {:.1f}, {:.1f}, {:.1f}]\n",
                 detect::class_name(names, d.class_id), d.score, d.box.x1, d.box.y1, d.box.x2,
                 d.box.y2);
  }
}

void run_run(const RunOptions& o) {
  // Fail on a mistyped image name before the (slow) model import.
  for (const std::string& image : o.images) {
    std::error_code ec;
    if (!fs::exists(image, ec)) user_error("image '{}' does not exist", image);
  }
  std::vector<fs::path> drawn;
  if (!o.draw_dir.empty()) drawn = plan_drawn_paths(o);
  const DetectorModel m = load_detector_model(o.model);
  if (!o.draw_dir.empty()) {
    std::error_code ec;
    fs::create_directories(o.draw_dir, ec);
    if (ec || !fs::is_directory(o.draw_dir))
      user_error("--draw {}: cannot create the folder: {}", o.draw_dir, ec.message());
  }
  std::vector<detect::ImageResult> results;
  for (size_t i = 0; i < o.images.size(); ++i) {
    detect::Image img = detect::read_image(o.images[i]);
    detect::ImageResult r{o.images[i], img.width, img.height, m.detector->detect(img)};
    if (!drawn.empty()) {
      detect::draw_detections(img, r.detections, m.names);
      detect::write_image(drawn[i].string(), img);
    }
    results.push_back(std::move(r));
  }
  const nlohmann::json json = detect::to_json(results, m.names);
  if (o.json == "-") {
    fmt::print("{}\n", json.dump(2));
    return;
  }
  if (!o.json.empty()) write_json_file(o.json, json, "--json");
  print_summary(results, m.names);
  if (!drawn.empty()) fmt::print("annotated images written to {}\n", o.draw_dir);
}

}  // namespace

void add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* c = app.add_subcommand("run", "Detect objects in images with a YOLO model");
  add_detector_model_options(*c, o->model);
  add_artifact_load_options(*c, o->model.load);
  c->add_option("images", o->images, "image files (JPEG, PNG, BMP)")->required();
  c->add_option("--conf", o->model.conf, "score threshold")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  c->add_option("--iou", o->model.iou, "NMS IoU threshold")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  c->add_option("--max-det", o->model.max_det, "most detections per image")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--device", o->model.device, "GPU running a CUDA artifact")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--json", o->json, "write the detections as JSON to FILE, or to stdout with '-'");
  c->add_option("--draw", o->draw_dir, "write annotated images into DIR");
  c->callback([o] { run_run(*o); });
}

}  // namespace yoloc::tools
