#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "artifact/trust.h"
#include "detect/eval.h"
#include "detect/pipeline.h"
#include "runtime/detector_config.h"
#include "runtime/engine.h"
#include "runtime/executor.h"
#include "yoloc/runtime.h"
#include "core/error.h"

namespace yoloc {

struct Detector::Impl {
  std::unique_ptr<runtime::Engine> engine;
  std::optional<detect::Detector> detector;  ///< absent: not a detector
  std::string no_detector_reason;
  mutable std::mutex mu;
  // submit() on an engine that does not detect by itself: results by ticket.
  std::map<uint64_t, std::vector<detect::Detection>> done;
  uint64_t next_ticket = 1;

  Impl(std::shared_ptr<const artifact::Artifact> a, const runtime::EngineOptions& options)
      : engine(runtime::Engine::open(std::move(a), options)) {}
};

Detector::Detector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Detector::Detector(Detector&&) noexcept = default;
Detector& Detector::operator=(Detector&&) noexcept = default;
Detector::~Detector() = default;

Detector Detector::load(const std::string& path, const DetectorOptions& options) {
  if (options.threads < 0) user_error("the thread count {} must be >= 0", options.threads);
  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::string> keys = options.trusted_keys;
  if (!options.public_key_file.empty()) keys.push_back(options.public_key_file);
  artifact::ReadOptions read;
  read.trusted_keys = artifact::trusted_keys(std::move(keys));
  if (options.require_signature && read.trusted_keys.empty())
    user_error(
        "a signed artifact is required, but no trusted public key was given for '{}'; pass "
        "one (trusted_keys, or {}=KEY.pub)",
        path, artifact::kTrustedKeysEnv);
  auto art = std::make_shared<const artifact::Artifact>(artifact::Artifact::open(path, read));
  runtime::EngineOptions engine_options;
  engine_options.threads = threads;
  engine_options.device = options.device;
  engine_options.in_flight = options.in_flight;
  engine_options.max_memory = options.max_memory;
  auto impl = std::make_unique<Impl>(art, engine_options);
  const runtime::DetectorOverrides overrides{options.conf, options.iou, options.max_det};
  if (auto cfg = runtime::manifest_detector_config(art->manifest(), overrides, path,
                                                   &impl->no_detector_reason)) {
    runtime::Engine* engine = impl->engine.get();
    auto network = [engine](const Tensor& input) { return engine->run({input}); };
    if (engine->detects()) {
      const detect::DetectorConfig c = *cfg;
      impl->detector.emplace(
          network,
          [engine, c](const detect::Image& img) {
            return engine->detect(img, c.conf, c.iou, c.max_det);
          },
          c);
    } else {
      impl->detector.emplace(network, *cfg);
    }
  }
  return Detector(std::move(impl));
}

/// Raises the UserError of detect() and submit() for an artifact that cannot detect or a bad
/// image.
void Detector::check_detectable(const detect::Image& image) const {
  if (!impl_->detector)
    user_error("the artifact cannot detect: {}; use infer() for its raw outputs",
               impl_->no_detector_reason);
  if (image.empty() || image.bgr.size() != static_cast<size_t>(image.width) * image.height * 3)
    user_error("the image is empty or its pixel buffer does not match {}x{}x3", image.width,
               image.height);
}

std::vector<detect::Detection> Detector::detect(const detect::Image& image) const {
  return detect(image, DetectParams{});
}

namespace {

std::vector<TensorInfo> tensor_infos(const std::vector<artifact::TensorSpec>& specs) {
  std::vector<TensorInfo> out;
  for (const auto& s : specs) out.push_back({s.name, s.dtype, s.shape});
  return out;
}

}  // namespace

std::vector<detect::Detection> Detector::detect(const detect::Image& image,
                                                const DetectParams& params,
                                                DetectTimings* timings) const {
  return detect(std::vector<detect::Image>{image}, params, timings)[0];
}

/// The pipeline of one call: the detector's with the call's thresholds.
detect::Detector Detector::pipeline(const DetectParams& params) const {
  detect::DetectorConfig c = impl_->detector->config();
  c.conf = params.conf.value_or(c.conf);
  c.iou = params.iou.value_or(c.iou);
  c.max_det = params.max_det.value_or(c.max_det);
  if (!(c.conf >= 0 && c.conf <= 1) || !(c.iou >= 0 && c.iou <= 1))
    user_error("conf {} and iou {} must each be in [0, 1]", c.conf, c.iou);
  if (c.max_det < 1) user_error("max_det {} must be at least 1", c.max_det);
  runtime::Engine* engine = impl_->engine.get();
  auto network = [engine](const Tensor& input) { return engine->run({input}); };
  if (!engine->detects()) return detect::Detector(network, c);
  return detect::Detector(
      network,
      [engine, c](const detect::Image& img) {
        return engine->detect(img, c.conf, c.iou, c.max_det);
      },
      c);
}

std::vector<std::vector<detect::Detection>> Detector::detect(
    const std::vector<detect::Image>& images, const DetectParams& params,
    DetectTimings* timings) const {
  if (images.empty()) user_error("detect: no images given");
  for (const detect::Image& image : images) check_detectable(image);
  const detect::Detector d = pipeline(params);
  detect::StageTimes t;
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<std::vector<detect::Detection>> out = d.detect(images, &t);
  if (timings) *timings = {t.preprocess_ms, t.inference_ms, t.postprocess_ms};
  return out;
}

int Detector::batch() const {
  return impl_->detector ? impl_->detector->config().batch : 1;
}

const std::string& Detector::not_detector_reason() const {
  return impl_->no_detector_reason;
}

detect::EvalReport Detector::evaluate(const std::string& dir, bool progress) const {
  if (!impl_->detector)
    user_error("the artifact cannot detect: {}; it cannot be evaluated",
               impl_->no_detector_reason);
  const detect::Detector d =
      pipeline(DetectParams{detect::kEvalConf, detect::kEvalIou, detect::kEvalMaxDet});
  std::lock_guard<std::mutex> lock(impl_->mu);
  return detect::evaluate_dataset(d, dir, progress);
}

uint64_t Detector::submit(const detect::Image& image) const {
  check_detectable(image);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->engine->detects()) {
    const detect::DetectorConfig& c = impl_->detector->config();
    return impl_->engine->submit(image, c.conf, c.iou, c.max_det);
  }
  const uint64_t ticket = impl_->next_ticket++;
  impl_->done[ticket] = impl_->detector->detect(image);
  return ticket;
}

std::vector<detect::Detection> Detector::wait(uint64_t ticket) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->engine->detects()) return impl_->engine->wait(ticket);
  const auto it = impl_->done.find(ticket);
  if (it == impl_->done.end())
    user_error("detection ticket {} is unknown or was already waited for", ticket);
  std::vector<detect::Detection> out = std::move(it->second);
  impl_->done.erase(it);
  return out;
}

std::vector<Tensor> Detector::infer(const std::vector<Tensor>& inputs) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->engine->run(inputs);
}

const std::vector<std::string>& Detector::class_names() const {
  return impl_->engine->manifest().class_names;
}
const std::string& Detector::family() const { return impl_->engine->manifest().family; }
const std::string& Detector::target() const { return impl_->engine->manifest().target; }
const std::string& Detector::precision() const { return impl_->engine->manifest().precision; }
std::vector<TensorInfo> Detector::inputs() const {
  return tensor_infos(impl_->engine->manifest().inputs);
}
std::vector<TensorInfo> Detector::outputs() const {
  return tensor_infos(impl_->engine->manifest().outputs);
}
int Detector::threads() const { return impl_->engine->threads(); }

}  // namespace yoloc
