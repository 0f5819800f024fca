#include "tuner/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include "core/error.h"

namespace yoloc::tuner {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

/// Shape numbers of a workload key ("... c64 h80 w80 k64 3x3 s1x1 p1x1 d1x1 ..."); the tokens a
/// key lacks stay NaN.
struct KeyShape {
  float c = kNan, h = kNan, w = kNan, k = kNan, kh = kNan, kw = kNan, sh = kNan, sw = kNan,
        ph = kNan, pw = kNan, dh = kNan, dw = kNan;

  explicit KeyShape(const std::string& key) {
    static const std::regex single(R"(([chwk])(\d+))"), pair(R"(([spd]?)(\d+)x(\d+).*)");
    size_t pos = 0;
    while (pos < key.size()) {
      size_t end = key.find(' ', pos);
      if (end == std::string::npos) end = key.size();
      const std::string tok = key.substr(pos, end - pos);
      pos = end + 1;
      std::smatch m;
      if (std::regex_match(tok, m, single)) {
        const float v = std::stof(m[2]);
        float* slot[] = {&c, &h, &w, &k};
        *slot[std::string("chwk").find(m[1].str()[0])] = v;
      } else if (std::regex_match(tok, m, pair)) {
        const float a = std::stof(m[2]), b = std::stof(m[3]);
        const std::string p = m[1];
        float* x = p.empty() ? &kh : p == "s" ? &sh : p == "p" ? &ph : &dh;
        float* y = p.empty() ? &kw : p == "s" ? &sw : p == "p" ? &pw : &dw;
        if (std::isnan(*x)) *x = a, *y = b;  // the first window (pool keys list several)
      }
    }
  }
  /// Output columns of a conv or pool window; NaN when the key does not say.
  float ow() const {
    const float d = std::isnan(dw) ? 1.f : dw, p = std::isnan(pw) ? 0.f : pw;
    return std::floor((w + 2 * p - d * (kw - 1) - 1) / sw) + 1;
  }
};

float log2p(double v) { return static_cast<float>(std::log2(1.0 + std::max(0.0, v))); }

void check(int rc, const char* what) {
  if (rc != 0) internal_error("xgboost {} failed: {}", what, XGBGetLastError());
}

}  // namespace

std::vector<float> cost_features(const TuneTask& task, const codegen::ScheduleConfig& config,
                                 const FeatureColumns& columns) {
  const TaskInfo& t = task.task;
  std::vector<float> f;
  for (const std::string& name : columns.templates)
    f.push_back(t.template_name == name ? 1.f : 0.f);
  const KeyShape s(t.key);
  const float ow = s.ow();
  f.insert(f.end(), {log2p(t.flops), log2p(static_cast<double>(task.bytes)),
                     static_cast<float>(t.batch), s.c, s.h, s.w, s.k, s.kh, s.kw, s.sh, ow});
  const auto knob = [&](const std::string& n) {
    auto it = config.values().find(n);
    return it == config.values().end() ? kNan : static_cast<float>(it->second);
  };
  for (const std::string& n : columns.knobs) f.push_back(knob(n));
  // What the trees cannot easily form from single knobs: register tile, column remainder
  // waste, channel-group count and the weight slice a cache tile holds.
  const float ocb = knob("ocb"), owb = knob("owb"), ict = knob("ict");
  const float col_tiles = std::ceil(ow / owb);
  f.push_back(ocb * owb);
  f.push_back(ocb * owb + ocb + 1);
  f.push_back(ow / (col_tiles * owb));
  f.push_back(col_tiles);
  f.push_back(s.k / 16 / ocb);
  f.push_back(ict * 16 / std::max(s.c, 1.f));
  f.push_back(log2p(s.kh * s.kw * std::min(s.c, 16.f) * ocb * 16 * 4 * ict));
  for (float& v : f)
    if (std::isinf(v)) v = kNan;
  return f;
}

struct CostModel::Impl {
  struct Sample {
    const TuneTask* task;
    codegen::ScheduleConfig config;
    double seconds;
  };
  std::vector<Sample> samples;
  FeatureColumns columns;  // of the model last trained
  BoosterHandle booster = nullptr;

  ~Impl() {
    if (booster) XGBoosterFree(booster);
  }

  std::vector<float> matrix(
      const std::vector<std::pair<const TuneTask*, const codegen::ScheduleConfig*>>& rows,
      size_t& cols) const {
    std::vector<float> m;
    cols = 0;
    for (const auto& [task, cfg] : rows) {
      std::vector<float> r = cost_features(*task, *cfg, columns);
      cols = r.size();
      m.insert(m.end(), r.begin(), r.end());
    }
    return m;
  }
};

CostModel::CostModel() : impl_(std::make_unique<Impl>()) {}
CostModel::~CostModel() = default;

void CostModel::add(const TuneTask& task, const codegen::ScheduleConfig& config, double seconds) {
  impl_->samples.push_back({&task, config, seconds});
}

size_t CostModel::samples() const { return impl_->samples.size(); }
bool CostModel::trained() const { return impl_->booster != nullptr; }

void CostModel::train() {
  Impl& m = *impl_;
  if (m.samples.size() < kMinSamples) return;
  // Labels: the best time of the task over this one (1 for the best, towards 0 for slow or
  // failed ones), so that tasks of very different sizes share one scale.
  std::map<std::string, double> best;
  std::set<std::string> templates, knobs;
  for (const Impl::Sample& s : m.samples) {
    templates.insert(s.task->task.template_name);
    for (const auto& [k, v] : s.config.values()) knobs.insert(k);
    if (s.seconds <= 0) continue;
    auto [it, fresh] = best.emplace(s.task->key(), s.seconds);
    if (!fresh) it->second = std::min(it->second, s.seconds);
  }
  m.columns = {{templates.begin(), templates.end()}, {knobs.begin(), knobs.end()}};
  std::vector<std::pair<const TuneTask*, const codegen::ScheduleConfig*>> rows;
  std::vector<float> labels;
  for (const Impl::Sample& s : m.samples) {
    rows.emplace_back(s.task, &s.config);
    const auto it = best.find(s.task->key());
    labels.push_back(s.seconds > 0 && it != best.end() ? static_cast<float>(it->second / s.seconds)
                                                       : 0.f);
  }
  size_t cols = 0;
  const std::vector<float> x = m.matrix(rows, cols);
  DMatrixHandle d = nullptr;
  check(XGDMatrixCreateFromMat(x.data(), rows.size(), cols, kNan, &d), "DMatrix");
  BoosterHandle b = nullptr;
  try {
    check(XGDMatrixSetFloatInfo(d, "label", labels.data(), labels.size()), "labels");
    check(XGBoosterCreate(&d, 1, &b), "booster");
    // One thread: the tuner forks measurement workers, and OpenMP teams do not survive a fork.
    const std::pair<const char*, const char*> params[] = {{"objective", "reg:squarederror"},
                                                          {"max_depth", "6"},
                                                          {"eta", "0.2"},
                                                          {"min_child_weight", "1"},
                                                          {"lambda", "1"},
                                                          {"nthread", "1"},
                                                          {"verbosity", "0"},
                                                          {"seed", "1"}};
    for (const auto& [k, v] : params) check(XGBoosterSetParam(b, k, v), "parameter");
    constexpr int kRounds = 80;
    for (int i = 0; i < kRounds; ++i) check(XGBoosterUpdateOneIter(b, i, d), "training");
  } catch (...) {
    if (b) XGBoosterFree(b);
    XGDMatrixFree(d);
    throw;
  }
  XGDMatrixFree(d);
  if (m.booster) XGBoosterFree(m.booster);
  m.booster = b;
}

std::vector<float> CostModel::predict(const TuneTask& task,
                                      const std::vector<codegen::ScheduleConfig>& configs) {
  Impl& m = *impl_;
  YOLOC_CHECK(m.booster, "cost model used before training");
  if (configs.empty()) return {};
  std::vector<std::pair<const TuneTask*, const codegen::ScheduleConfig*>> rows;
  for (const codegen::ScheduleConfig& c : configs) rows.emplace_back(&task, &c);
  size_t cols = 0;
  const std::vector<float> x = m.matrix(rows, cols);
  DMatrixHandle d = nullptr;
  check(XGDMatrixCreateFromMat(x.data(), rows.size(), cols, kNan, &d), "DMatrix");
  bst_ulong len = 0;
  const float* out = nullptr;
  const int rc = XGBoosterPredict(m.booster, d, 0, 0, 0, &len, &out);
  std::vector<float> pred;
  if (rc == 0) pred.assign(out, out + len);
  XGDMatrixFree(d);
  check(rc, "prediction");
  YOLOC_CHECK(pred.size() == configs.size(), "xgboost predicted {} rows of {}", pred.size(),
              configs.size());
  return pred;
}

}  // namespace yoloc::tuner
