// yoloc run MODEL SOURCE... [--conf] [--iou] [--classes] [--json FILE|-] [--format F] [--draw DIR]
//                            [--save-txt [--save-conf] [--save-dir DIR]] [--threads] [--device]
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "detect/draw.h"
#include "detect/result.h"
#include "tools/commands.h"
#include "tools/detector_model.h"
#include "tools/run_inputs.h"
#include "tools/run_outputs.h"
#include "tools/video/video.h"

namespace yoloc::tools {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
  DetectorModelOptions model;
  std::vector<std::string> sources;
  std::string json;
  std::string format = "yoloc";
  std::string draw_dir;
  bool save_txt = false;
  bool save_conf = false;
  std::string save_dir = "runs/detect/predict";
  std::vector<int> classes;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// DIR/<image name>, as PNG unless the image is a JPEG or PNG already; DIR/<stem>.mp4 for a
/// video.
fs::path drawn_path(const fs::path& dir, const RunInput& in) {
  fs::path name = fs::path(in.path).filename();
  const std::string ext = lower(name.extension().string());
  if (in.video)
    name.replace_extension(".mp4");
  else if (ext != ".png" && ext != ".jpg" && ext != ".jpeg")
    name.replace_extension(".png");
  return dir / name;
}

/// SAVE_DIR/labels/<stem>.txt (a video's frames: <stem>_<frame>.txt, as Ultralytics names them).
fs::path label_path(const fs::path& save_dir, const std::string& input, int frame = -1) {
  const std::string stem = fs::path(input).stem().string();
  return save_dir / "labels" / (frame < 0 ? stem + ".txt" : fmt::format("{}_{}.txt", stem, frame));
}

/// Refuses an output path that is one of the inputs, or two inputs written to one path.
void check_outputs(const std::vector<RunInput>& inputs, const std::vector<fs::path>& outputs,
                   const std::string& option) {
  std::map<fs::path, std::string> taken;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fs::path& p = outputs[i];
    for (const RunInput& in : inputs) {
      std::error_code ec;
      if (fs::equivalent(p, in.path, ec))
        user_error("{}: '{}' would overwrite the input '{}'; choose another folder", option,
                   p.string(), in.path);
    }
    auto [it, fresh] = taken.emplace(p.lexically_normal(), inputs[i].path);
    if (!fresh)
      user_error("{}: the inputs '{}' and '{}' would both be written to '{}'; run them "
                 "separately or rename one",
                 option, it->second, inputs[i].path, p.string());
  }
}

void make_folder(const fs::path& dir, const std::string& option) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    user_error("{} {}: cannot create the folder: {}", option, dir.string(), ec.message());
}

void print_result(const detect::ImageResult& r, const std::vector<std::string>& names) {
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

/// Images waiting for a batch, their detections, and where each result goes.
class Runner {
 public:
  Runner(const RunOptions& o, const DetectorModel& m) : o_(o), m_(m) {}

  /// Queues one image (a file, or frame `frame` of a video going to `video_out`).
  void add(detect::Image img, std::string name, std::string source, int frame,
           VideoWriter* video_out, fs::path drawn) {
    pending_.push_back({std::move(img), std::move(name), std::move(source), frame, video_out,
                        std::move(drawn)});
    if (pending_.size() >= static_cast<size_t>(m_.batch())) flush();
  }

  /// Detects the queued images and writes their outputs.
  void flush() {
    if (pending_.empty()) return;
    std::vector<detect::Image> imgs;
    for (Pending& p : pending_) imgs.push_back(std::move(p.img));
    detect::StageTimes t;
    std::vector<std::vector<detect::Detection>> dets = m_.detect(imgs, &t);
    times_.preprocess_ms += t.preprocess_ms;
    times_.inference_ms += t.inference_ms;
    times_.postprocess_ms += t.postprocess_ms;
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      std::vector<detect::Detection>& d = dets[i];
      if (!o_.classes.empty())
        d.erase(std::remove_if(d.begin(), d.end(),
                               [&](const detect::Detection& x) {
                                 return std::find(o_.classes.begin(), o_.classes.end(),
                                                  x.class_id) == o_.classes.end();
                               }),
                d.end());
      detect::ImageResult r{p.name, imgs[i].width, imgs[i].height, std::move(d)};
      if (o_.save_txt) {
        const fs::path txt = label_path(o_.save_dir, p.source, p.frame);
        std::ofstream f(txt);
        if (!(f << yolo_label_text(r, o_.save_conf)))
          user_error("--save-txt: cannot write '{}'", txt.string());
      }
      if (!o_.draw_dir.empty()) {
        detect::draw_detections(imgs[i], r.detections, m_.names());
        if (p.video_out)
          p.video_out->write(imgs[i]);
        else
          detect::write_image(p.drawn.string(), imgs[i]);
      }
      if (o_.json != "-") print_result(r, m_.names());
      results_.push_back(std::move(r));
    }
    pending_.clear();
  }

  const std::vector<detect::ImageResult>& results() const { return results_; }
  const detect::StageTimes& times() const { return times_; }

 private:
  struct Pending {
    detect::Image img;
    std::string name;    ///< in the results: the file, or "<video>#<frame>"
    std::string source;  ///< the input file
    int frame = -1;      ///< a video's frame number, else -1
    VideoWriter* video_out = nullptr;
    fs::path drawn;
  };
  const RunOptions& o_;
  const DetectorModel& m_;
  std::vector<Pending> pending_;
  std::vector<detect::ImageResult> results_;
  detect::StageTimes times_;
};

/// An input that could not be read, and why.
struct Skipped {
  std::string path;
  std::string reason;
};

void warn_skipped(const Skipped& s) {
  std::fprintf(stderr, "warning: skipping '%s': %s\n", s.path.c_str(), s.reason.c_str());
}

/// Detects every frame of a video; false (with a warning) when it cannot be opened.
bool run_video(const RunInput& in, const fs::path& drawn, const RunOptions& o, Runner& runner,
               std::vector<Skipped>& skipped) {
  std::unique_ptr<VideoReader> reader;
  try {
    reader = open_video(in.path);
  } catch (const UserError& e) {
    skipped.push_back({in.path, e.what()});
    warn_skipped(skipped.back());
    return false;
  }
  std::unique_ptr<VideoWriter> writer;
  detect::Image frame;
  for (int n = 0; reader->next(frame); ++n) {
    if (!o.draw_dir.empty() && !writer)
      writer = create_video(drawn.string(), frame.width, frame.height, reader->fps());
    runner.add(std::move(frame), fmt::format("{}#{}", in.path, n), in.path, n, writer.get(), {});
  }
  runner.flush();  // the writer goes with this video
  return true;
}

void run_run(const RunOptions& o) {
  // Fail on a mistyped name, a colliding output or a video this build cannot read before the
  // (slow) model import.
  const std::vector<RunInput> inputs = expand_run_inputs(o.sources);
  for (const RunInput& in : inputs)
    if (in.video && !video_supported()) open_video(in.path);
  std::vector<fs::path> drawn(inputs.size());
  if (!o.draw_dir.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) drawn[i] = drawn_path(o.draw_dir, inputs[i]);
    check_outputs(inputs, drawn, "--draw");
  }
  if (o.save_txt) {
    std::vector<fs::path> labels;
    for (const RunInput& in : inputs) labels.push_back(label_path(o.save_dir, in.path));
    check_outputs(inputs, labels, "--save-txt");
  }
  if (o.save_conf && !o.save_txt) user_error("--save-conf: add --save-txt (it adds the score)");
  const DetectorModel m = load_detector_model(o.model);
  for (int c : o.classes)
    if (c < 0 || (!m.names().empty() && static_cast<size_t>(c) >= m.names().size()))
      user_error("--classes {}: the model has classes 0 to {}", c, m.names().size() - 1);
  if (!o.draw_dir.empty()) make_folder(o.draw_dir, "--draw");
  if (o.save_txt) make_folder(fs::path(o.save_dir) / "labels", "--save-dir");

  Runner runner(o, m);
  std::vector<Skipped> skipped;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].video) {
      run_video(inputs[i], drawn[i], o, runner, skipped);
      continue;
    }
    detect::Image img;
    try {
      img = detect::read_image(inputs[i].path);
    } catch (const UserError& e) {
      skipped.push_back({inputs[i].path, e.what()});
      warn_skipped(skipped.back());
      continue;
    }
    runner.add(std::move(img), inputs[i].path, inputs[i].path, -1, nullptr, drawn[i]);
  }
  runner.flush();

  const nlohmann::json json = results_json(runner.results(), m.names(), o.format);
  if (o.json == "-") {
    fmt::print("{}\n", json.dump(2));
  } else if (!o.json.empty()) {
    write_json_file(o.json, json, "--json");
  }
  // Ultralytics' speed line, on stderr when stdout carries the JSON.
  const double n = std::max<size_t>(1, runner.results().size());
  const detect::StageTimes& t = runner.times();
  const std::string speed = fmt::format(
      "Speed: {:.1f}ms preprocess, {:.1f}ms inference, {:.1f}ms postprocess per image at shape "
      "({}, 3, {}, {})\n",
      t.preprocess_ms / n, t.inference_ms / n, t.postprocess_ms / n, m.batch(), m.input_h(),
      m.input_w());
  std::fputs(speed.c_str(), o.json == "-" ? stderr : stdout);
  if (o.json != "-") {
    if (!o.draw_dir.empty()) fmt::print("annotated images written to {}\n", o.draw_dir);
    if (o.save_txt)
      fmt::print("labels written to {}\n", (fs::path(o.save_dir) / "labels").string());
  }
  std::fflush(stdout);
  if (inputs.size() == 1 && skipped.size() == 1) user_error("{}", skipped.front().reason);
  if (!skipped.empty())
    user_error("{} of {} inputs could not be read and were skipped (first: '{}': {}); the "
               "others were processed",
               skipped.size(), inputs.size(), skipped.front().path, skipped.front().reason);
}

}  // namespace

void add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  o->model.iou = 0.7f;  // Ultralytics predict's default
  auto* c = app.add_subcommand("run", "Detect objects in images and videos with a YOLO model");
  add_detector_model_options(*c, o->model);
  add_artifact_load_options(*c, o->model.load);
  c->add_option("sources", o->sources,
                "image files (JPEG, PNG, BMP, ...), video files (.mp4, .avi, .mov, .mkv, ...), "
                "folders of them, or globs ('images/*.jpg')")
      ->required();
  c->add_option("--conf", o->model.conf, "score threshold")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  c->add_option("--iou", o->model.iou, "NMS IoU threshold (Ultralytics predict's default)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  c->add_option("--max-det", o->model.max_det, "most detections per image")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--classes", o->classes,
                "keep only these class ids: --classes 0 2 5 (after the sources) or 0,2,5")
      ->delimiter(',');
  add_runtime_options(*c, o->model);
  c->add_option("--json", o->json, "write the detections as JSON to FILE, or to stdout with '-'");
  c->add_option("--format", o->format,
                "the JSON's shape: yoloc ({image, width, height, detections: [{class_id, "
                "class_name, score, box}]}), ultralytics (Results.summary() per image) or coco "
                "(the COCO results list: image_id, category_id, bbox [x, y, w, h], score)")
      ->capture_default_str()
      ->check(CLI::IsMember({"yoloc", "ultralytics", "coco"}));
  c->add_option("--draw", o->draw_dir,
                "write annotated images (and videos, as .mp4) into DIR, named as the inputs");
  c->add_flag("--save-txt", o->save_txt,
              "write YOLO labels (class cx cy w h, normalised) to SAVE_DIR/labels/<stem>.txt "
              "(a video's frames: <stem>_<frame>.txt)");
  c->add_flag("--save-conf", o->save_conf, "with --save-txt: append each box's score");
  c->add_option("--save-dir", o->save_dir, "where --save-txt writes its labels/ folder")
      ->capture_default_str();
  c->callback([o] { run_run(*o); });
}

}  // namespace yoloc::tools
