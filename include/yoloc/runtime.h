#pragma once
/// The yoloc runtime's C++ API: load a compiled `.ycm` artifact and run it, as a detector
/// (image in, boxes out: pre-processing, network, decoding and NMS as the manifest describes)
/// or as a raw network (tensors in, tensors out). Errors raise yoloc::UserError with a message
/// that says what is wrong and what to do. Links against libyoloc_runtime only.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "yoloc/detection.h"
#include "yoloc/error.h"
#include "yoloc/evaluation.h"
#include "yoloc/image.h"
#include "yoloc/tensor.h"

namespace yoloc {

namespace detect {
class Detector;  // the pipeline inside (pre-processing, network, decoding, NMS)
}  // namespace detect

using detect::Box;
using detect::Detection;
using detect::EvalReport;
using detect::Image;
using detect::ImageResult;
using detect::MapResult;

struct DetectorOptions {
  int threads = 0;              ///< worker threads; 0: the machine's hardware threads
  int device = 0;               ///< the GPU of a CUDA artifact
  std::optional<float> conf;    ///< score threshold; default: the manifest's, else 0.25
  std::optional<float> iou;     ///< NMS IoU threshold; default: the manifest's, else 0.45
  std::optional<int> max_det;   ///< most detections per image; default: manifest's, else 300
  /// Public key files (yoloc keygen's NAME.pub): when any is given, or YOLOC_TRUSTED_KEYS
  /// names any, only an artifact signed by one of them loads; an empty entry is an error.
  std::vector<std::string> trusted_keys;
  /// Refuse to load at all unless some key is trusted (here or in YOLOC_TRUSTED_KEYS): for
  /// deployments where running an unsigned artifact must be impossible.
  bool require_signature = false;
  /// One more trusted key, as trusted_keys (kept for earlier callers; empty: none).
  std::string public_key_file;
  /// The most arena bytes a CPU artifact may ask for (0: half of this machine's memory).
  uint64_t max_memory = 0;
  /// Images a CUDA detector works on at once through submit(): each on its own stream, arena,
  /// pinned frame buffer and CUDA graph (kernels and weights shared), so one frame's copy,
  /// upload and pre-processing overlap another's network.
  int in_flight = 2;
};

/// Per-call overrides of the detection thresholds (unset: the detector's, from its options or
/// the manifest).
struct DetectParams {
  std::optional<float> conf;
  std::optional<float> iou;
  std::optional<int> max_det;
};

/// Where a detect() call spent its time, in milliseconds. On a GPU artifact the whole pipeline
/// runs as one graph: its time is all `inference`.
struct DetectTimings {
  double preprocess_ms = 0;
  double inference_ms = 0;
  double postprocess_ms = 0;
};

/// One network input or output as the manifest declares it.
struct TensorInfo {
  std::string name;
  std::string dtype;           ///< "float32", "float16", "uint8", ...
  std::vector<int64_t> shape;  ///< a fixed shape (the batch included)
};

/// A loaded artifact. Thread-safe: concurrent calls are serialised (one arena per detector, or
/// one per frame in flight with submit(); load one detector per thread for parallel streams).
class Detector {
 public:
  /// Opens, verifies (digest, and signature with the trusted keys) and prepares the artifact
  /// at `path`. Raises a UserError for a missing, corrupt, tampered or unrunnable artifact, an
  /// unsigned or wrongly signed one where keys are trusted, or bad options.
  static Detector load(const std::string& path, const DetectorOptions& options = {});

  Detector(Detector&&) noexcept;
  Detector& operator=(Detector&&) noexcept;
  ~Detector();

  /// Detections on `image` (BGR, see detect::Image) in image pixels, by score descending. A
  /// batch-N artifact runs the image padded to N with blank inputs.
  /// Raises a UserError for an empty image or an artifact that is not a detector.
  std::vector<detect::Detection> detect(const detect::Image& image) const;
  /// The same with per-call thresholds (each in [0, 1], max_det > 0; a UserError otherwise),
  /// and the time of each stage in `timings` when it is not null.
  std::vector<detect::Detection> detect(const detect::Image& image, const DetectParams& params,
                                        DetectTimings* timings = nullptr) const;
  /// Detections on each of `images` (one list per image, in order): pre-processes up to
  /// batch() images, runs the network once per batch (the last one padded with blank inputs)
  /// and decodes each item; the same detections as one detect() per image. `timings` receives
  /// each stage's time summed over the images. A UserError for no image or an empty one.
  std::vector<std::vector<detect::Detection>> detect(const std::vector<detect::Image>& images,
                                                     const DetectParams& params = {},
                                                     DetectTimings* timings = nullptr) const;
  /// Images per network run: the artifact's batch (1 for an artifact that is not a detector).
  int batch() const;
  /// Why the artifact cannot detect (its network's inputs or outputs are not a detector's, or
  /// its manifest names no family); empty for a detector.
  const std::string& not_detector_reason() const;

  /// Pipelined detection: starts detecting `image` and returns a ticket at once (the image may
  /// be reused as soon as submit returns); wait(ticket) returns its detections, as detect()
  /// would. On a CUDA artifact up to DetectorOptions::in_flight images run concurrently (a
  /// submit beyond that first finishes the oldest); on the CPU, submit runs the detection
  /// before it returns. Raises a UserError as detect() does, and wait() for a ticket never
  /// given or already waited for.
  uint64_t submit(const detect::Image& image) const;
  std::vector<detect::Detection> wait(uint64_t ticket) const;

  /// COCO mAP50 and mAP50-95 on a folder of images/ and YOLO labels/ at the evaluation
  /// thresholds (conf 0.001, NMS IoU 0.7, 300 boxes), with every image's detections; a
  /// progress bar on stderr when `progress`.
  detect::EvalReport evaluate(const std::string& dir, bool progress = false) const;

  /// The raw network: `inputs` match the manifest's inputs (count, dtype, shape).
  std::vector<Tensor> infer(const std::vector<Tensor>& inputs) const;

  /// The class names from the manifest (index = class id).
  const std::vector<std::string>& class_names() const;
  /// The detector family ("yolov8", ...), empty for an artifact that is not a detector.
  const std::string& family() const;
  /// The artifact's target ("cpu-avx512", "cuda-sm_90", ...) and precision ("fp32", ...).
  const std::string& target() const;
  const std::string& precision() const;
  /// The network's inputs and outputs, as infer() takes and returns them.
  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  int threads() const;

 private:
  struct Impl;
  explicit Detector(std::unique_ptr<Impl> impl);
  void check_detectable(const detect::Image& image) const;
  detect::Detector pipeline(const DetectParams& params) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yoloc
