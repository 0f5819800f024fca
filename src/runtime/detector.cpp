#include <algorithm>
#include <mutex>
#include <thread>

#include "detect/pipeline.h"
#include "runtime/detector_config.h"
#include "runtime/executor.h"
#include "yoloc/runtime.h"

namespace yoloc {

struct Detector::Impl {
  runtime::Executor executor;
  std::optional<detect::Detector> detector;  ///< absent: not a batch-1 detector
  std::string no_detector_reason;
  mutable std::mutex mu;

  Impl(std::shared_ptr<const artifact::Artifact> a, int threads)
      : executor(std::move(a), threads) {}
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
  auto art = std::make_shared<const artifact::Artifact>(
      artifact::Artifact::open(path, {options.public_key_file}));
  auto impl = std::make_unique<Impl>(art, threads);
  const runtime::DetectorOverrides overrides{options.conf, options.iou, options.max_det};
  if (auto cfg = runtime::manifest_detector_config(art->manifest(), overrides, path,
                                                   &impl->no_detector_reason)) {
    runtime::Executor* exec = &impl->executor;
    impl->detector.emplace([exec](const Tensor& input) { return exec->run({input}); }, *cfg);
  }
  return Detector(std::move(impl));
}

std::vector<detect::Detection> Detector::detect(const detect::Image& image) const {
  if (!impl_->detector)
    user_error("the artifact cannot detect: {}; use infer() for its raw outputs",
               impl_->no_detector_reason);
  if (image.empty() || image.bgr.size() != static_cast<size_t>(image.width) * image.height * 3)
    user_error("the image is empty or its pixel buffer does not match {}x{}x3", image.width,
               image.height);
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->detector->detect(image);
}

std::vector<Tensor> Detector::infer(const std::vector<Tensor>& inputs) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->executor.run(inputs);
}

const std::vector<std::string>& Detector::class_names() const {
  return impl_->executor.manifest().class_names;
}
const std::string& Detector::family() const { return impl_->executor.manifest().family; }
int Detector::threads() const { return impl_->executor.threads(); }

}  // namespace yoloc
