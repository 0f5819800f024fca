#include "detect/eval.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "detect/best_f1.h"

namespace yoloc::detect {

namespace {

constexpr int kNumIouThresholds = 10;
constexpr int kNumRecallPoints = 101;

/// pycocotools' thresholds: np.linspace(.5, .95, 10), whose values are start + i * step with the
/// last one set to the end point exactly; the same doubles keep ties identical.
std::array<double, kNumIouThresholds> iou_thresholds() {
  std::array<double, kNumIouThresholds> t{};
  const double step = (0.95 - 0.5) / (kNumIouThresholds - 1);
  for (int i = 0; i < kNumIouThresholds; ++i) t[i] = 0.5 + i * step;
  t[kNumIouThresholds - 1] = 0.95;
  return t;
}

/// IoU in double, as pycocotools computes it.
double iou_double(const Box& a, const Box& b) {
  const double iw = std::max(0.0, std::min<double>(a.x2, b.x2) - std::max<double>(a.x1, b.x1));
  const double ih = std::max(0.0, std::min<double>(a.y2, b.y2) - std::max<double>(a.y1, b.y1));
  const double inter = iw * ih;
  const double uni = (double{a.x2} - a.x1) * (double{a.y2} - a.y1) +
                     (double{b.x2} - b.x1) * (double{b.y2} - b.y1) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

/// One detection after matching: its score and whether it is a true positive per threshold.
struct Scored {
  float score = 0;
  std::array<bool, kNumIouThresholds> tp{};
};

/// 101-point interpolated AP from detections in global score order (pycocotools accumulate).
double interpolated_ap(const std::vector<Scored>& dets, int threshold, int64_t num_gt) {
  const size_t n = dets.size();
  std::vector<double> recall(n), precision(n);
  double tp = 0, fp = 0;
  for (size_t i = 0; i < n; ++i) {
    (dets[i].tp[threshold] ? tp : fp) += 1;
    recall[i] = tp / static_cast<double>(num_gt);
    precision[i] = tp / (tp + fp + 2.220446049250313e-16);  // np.spacing(1)
  }
  for (size_t i = n; i-- > 1;) precision[i - 1] = std::max(precision[i - 1], precision[i]);
  double sum = 0;
  for (int r = 0; r < kNumRecallPoints; ++r) {
    const double point = r == kNumRecallPoints - 1 ? 1.0 : r * 0.01;  // np.linspace(0, 1, 101)
    const size_t k = std::lower_bound(recall.begin(), recall.end(), point) - recall.begin();
    if (k < n) sum += precision[k];
  }
  return sum / kNumRecallPoints;
}

/// "eval [=====>    ] 37/128" redrawn in place on a terminal; silent otherwise.
class Progress {
 public:
  Progress(bool enabled, size_t total) : enabled_(enabled && isatty(fileno(stderr))),
                                         total_(total) {}
  ~Progress() {
    if (enabled_) std::fputc('\n', stderr);
  }
  void update(size_t done) const {
    if (!enabled_) return;
    constexpr size_t kWidth = 30;
    const size_t filled = total_ ? done * kWidth / total_ : kWidth;
    std::string bar(filled, '=');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\reval [%s] %zu/%zu", bar.c_str(), done, total_);
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  size_t total_;
};

}  // namespace

bool is_image_file(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp";
}

MapResult compute_map(const std::vector<ImageEval>& images) {
  const auto thresholds = iou_thresholds();
  // Per class: detections in image order, each image's sorted by score (pycocotools'
  // concatenation order before its stable global sort), and the ground-truth count.
  std::map<int, std::vector<Scored>> scored;
  std::map<int, int64_t> num_gt;
  std::map<int, int> images_with;
  MapResult result;
  result.images = static_cast<int>(images.size());
  for (const ImageEval& im : images) {
    std::map<int, std::vector<const Detection*>> dets_by_class;
    std::map<int, std::vector<const GroundTruth*>> gt_by_class;
    for (const Detection& d : im.detections) dets_by_class[d.class_id].push_back(&d);
    for (const GroundTruth& g : im.ground_truth) {
      gt_by_class[g.class_id].push_back(&g);
      ++num_gt[g.class_id];
    }
    for (const auto& [cls, gts] : gt_by_class) ++images_with[cls];
    result.instances += static_cast<int64_t>(im.ground_truth.size());
    for (auto& [cls, dets] : dets_by_class) {
      std::stable_sort(dets.begin(), dets.end(), [](const Detection* a, const Detection* b) {
        return a->score > b->score;
      });
      if (dets.size() > static_cast<size_t>(kEvalMaxDet)) dets.resize(kEvalMaxDet);
      const std::vector<const GroundTruth*>& gts = gt_by_class[cls];
      std::vector<Scored> out(dets.size());
      for (size_t d = 0; d < dets.size(); ++d) out[d].score = dets[d]->score;
      for (int t = 0; t < kNumIouThresholds; ++t) {
        std::vector<bool> matched(gts.size(), false);
        for (size_t d = 0; d < dets.size(); ++d) {
          double best = std::min(thresholds[t], 1 - 1e-10);
          int m = -1;
          for (size_t g = 0; g < gts.size(); ++g) {
            if (matched[g]) continue;
            const double v = iou_double(dets[d]->box, gts[g]->box);
            if (v < best) continue;
            best = v;
            m = static_cast<int>(g);
          }
          if (m >= 0) matched[static_cast<size_t>(m)] = out[d].tp[t] = true;
        }
      }
      auto& all = scored[cls];
      all.insert(all.end(), out.begin(), out.end());
    }
  }
  double sum50 = 0, sum50_95 = 0;
  std::vector<ClassMatches> matches;
  for (const auto& [cls, count] : num_gt) {
    std::vector<Scored>& dets = scored[cls];
    std::stable_sort(dets.begin(), dets.end(),
                     [](const Scored& a, const Scored& b) { return a.score > b.score; });
    ClassMetrics m;
    m.class_id = cls;
    m.images = images_with[cls];
    m.instances = count;
    for (int t = 0; t < kNumIouThresholds; ++t) {
      const double ap = interpolated_ap(dets, t, count);
      if (t == 0) m.map50 = ap;
      m.map50_95 += ap / kNumIouThresholds;
    }
    sum50 += m.map50;
    sum50_95 += m.map50_95;
    ClassMatches cm;
    cm.num_gt = count;
    for (const Scored& d : dets) {
      cm.scores.push_back(d.score);
      cm.true_positive.push_back(d.tp[0]);
    }
    matches.push_back(std::move(cm));
    result.per_class.push_back(m);
    ++result.classes;
  }
  if (result.classes > 0) {
    result.map50 = sum50 / result.classes;
    result.map50_95 = sum50_95 / result.classes;
    const PrecisionRecall pr = best_f1_precision_recall(matches);
    for (size_t c = 0; c < result.per_class.size(); ++c) {
      result.per_class[c].precision = pr.precision[c];
      result.per_class[c].recall = pr.recall[c];
      result.precision += pr.precision[c] / result.classes;
      result.recall += pr.recall[c] / result.classes;
    }
  }
  return result;
}

std::vector<GroundTruth> read_yolo_labels(const std::string& path, int width, int height) {
  std::ifstream f(path);
  if (!f) user_error("cannot read label file '{}'", path);
  std::vector<GroundTruth> gts;
  std::string line;
  for (int lineno = 1; std::getline(f, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream in(line);
    double cls = 0, cx = 0, cy = 0, w = 0, h = 0;
    std::string extra;
    const bool parsed = (in >> cls >> cx >> cy >> w >> h) && !(in >> extra);
    const bool finite = std::isfinite(cls) && std::isfinite(cx) && std::isfinite(cy) &&
                        std::isfinite(w) && std::isfinite(h);
    if (!parsed || !finite || cls < 0 || cls > 1e6 || cls != std::floor(cls) || w < 0 || h < 0)
      user_error("{}:{}: malformed label line '{}': expected 'class cx cy w h' with an integer "
                 "class and a box normalised to the image size",
                 path, lineno, line);
    GroundTruth g;
    g.class_id = static_cast<int>(cls);
    g.box = {static_cast<float>((cx - w / 2) * width), static_cast<float>((cy - h / 2) * height),
             static_cast<float>((cx + w / 2) * width), static_cast<float>((cy + h / 2) * height)};
    gts.push_back(g);
  }
  return gts;
}

std::vector<Sample> list_dataset(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path images = fs::path(dir) / "images", labels = fs::path(dir) / "labels";
  std::error_code ec;
  if (!fs::is_directory(images, ec))
    user_error("dataset '{}': expected a folder '{}' of images (and '{}' of YOLO labels)", dir,
               images.string(), labels.string());
  std::vector<Sample> samples;
  for (const auto& e : fs::directory_iterator(images)) {
    if (!e.is_regular_file() || !is_image_file(e.path())) continue;
    samples.push_back(
        {e.path().string(), (labels / e.path().stem()).string() + ".txt"});
  }
  if (samples.empty())
    user_error("dataset '{}': no .jpg, .jpeg, .png or .bmp image in '{}'", dir, images.string());
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.image < b.image; });
  return samples;
}

EvalReport evaluate_dataset(const Detector& detector, const std::string& dir, bool progress) {
  const std::vector<Sample> samples = list_dataset(dir);
  std::vector<ImageEval> evals;
  EvalReport report;
  Progress bar(progress, samples.size());
  bar.update(0);
  const size_t batch = static_cast<size_t>(detector.config().batch);
  for (size_t first = 0; first < samples.size(); first += batch) {
    std::vector<Image> imgs;
    for (size_t i = first; i < std::min(samples.size(), first + batch); ++i)
      imgs.push_back(read_image(samples[i].image));
    std::vector<std::vector<Detection>> dets = detector.detect(imgs);
    for (size_t i = 0; i < imgs.size(); ++i) {
      const Sample& s = samples[first + i];
      ImageEval e;
      e.detections = std::move(dets[i]);
      std::error_code ec;
      if (std::filesystem::exists(s.labels, ec))
        e.ground_truth = read_yolo_labels(s.labels, imgs[i].width, imgs[i].height);
      report.results.push_back({s.image, imgs[i].width, imgs[i].height, e.detections});
      evals.push_back(std::move(e));
    }
    bar.update(evals.size());
  }
  report.map = compute_map(evals);
  return report;
}

}  // namespace yoloc::detect
