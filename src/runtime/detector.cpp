#include <algorithm>
#include <mutex>
#include <thread>

#include "detect/family.h"
#include "detect/pipeline.h"
#include "runtime/executor.h"
#include "yoloc/runtime.h"

namespace yoloc {
namespace {

/// A number from the manifest's postprocess object, or nullopt when absent or not a number.
std::optional<double> manifest_number(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

/// The pre-processing the manifest names ("letterbox" or "yolox"); it must be the family's.
void check_preprocess(const artifact::Manifest& m, detect::Family family,
                      const std::string& where) {
  auto it = m.preprocess.find("kind");
  if (it == m.preprocess.end()) return;
  const std::string expected = family == detect::Family::kYoloX ? "yolox" : "letterbox";
  if (!it->is_string() || it->get<std::string>() != expected)
    user_error(
        "artifact '{}': preprocess.kind is {}, but family '{}' uses '{}'; recompile the "
        "model",
        where, it->dump(), m.family, expected);
}

}  // namespace

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
  const artifact::Manifest& m = art->manifest();
  if (m.family.empty()) {
    impl->no_detector_reason = "it names no detector family";
  } else if (m.inputs.size() != 1 || m.inputs[0].shape.size() != 4 || m.inputs[0].shape[0] != 1 ||
             m.inputs[0].shape[1] != 3) {
    impl->no_detector_reason = "its input is not one 1x3xHxW image";
  } else {
    const detect::Family family = detect::parse_family(m.family);
    check_preprocess(m, family, path);
    detect::DetectorConfig cfg;
    cfg.family = family;
    cfg.input_h = static_cast<int>(m.inputs[0].shape[2]);
    cfg.input_w = static_cast<int>(m.inputs[0].shape[3]);
    cfg.input_dtype = dtype_from_name(m.inputs[0].dtype);
    cfg.conf = options.conf.value_or(
        static_cast<float>(manifest_number(m.postprocess, "conf").value_or(cfg.conf)));
    cfg.iou = options.iou.value_or(
        static_cast<float>(manifest_number(m.postprocess, "iou").value_or(cfg.iou)));
    cfg.max_det = options.max_det.value_or(
        static_cast<int>(manifest_number(m.postprocess, "max_det").value_or(cfg.max_det)));
    runtime::Executor* exec = &impl->executor;
    impl->detector.emplace([exec](const Tensor& input) { return exec->run({input}); }, cfg);
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
