#pragma once
/// Pipelined detection on one GPU: several frames in flight, each on a lane of its own (a
/// CudaExecutor::make_lane: own stream, arena, pinned frame buffer and CUDA graph; kernels and
/// weights shared), so that the host's copy of the next frame into pinned memory, its upload and
/// pre-processing overlap the network of the frames before it.
///
///   PipelinedDetect p(exec, 2);
///   const uint64_t a = p.submit(frame0, conf, iou, max_det);  // returns at once
///   const uint64_t b = p.submit(frame1, conf, iou, max_det);
///   auto dets_a = p.wait(a);                                   // waits for frame0 only
///
/// Lanes are used round robin; a submit to a lane whose frame is still in flight first finishes
/// that frame (its detections are kept for its wait). Not thread-safe (callers serialise).
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "detect/decode.h"
#include "yoloc/image.h"
#include "runtime/cuda/cuda_executor.h"

namespace yoloc::runtime::cuda {

class PipelinedDetect {
 public:
  /// Up to `in_flight` frames (>= 1) on `base` and in_flight - 1 lanes made from it (made at
  /// first use). `base` must outlive this object. Raises a UserError when base cannot detect.
  PipelinedDetect(CudaExecutor& base, int in_flight);

  /// Copies `image` into a free lane's pinned frame buffer, launches its detection and returns
  /// its ticket (the image may be reused at once).
  uint64_t submit(const detect::Image& image, float conf, float iou, int max_det);
  /// The detections of `ticket` (image pixels, score descending), waiting for them if needed.
  /// Raises a UserError for a ticket never given or already waited for.
  std::vector<detect::Detection> wait(uint64_t ticket);

  /// Finishes every frame in flight (their detections are kept for their waits), so that the
  /// base executor may be used directly.
  void drain();

  int in_flight() const { return static_cast<int>(lanes_.size()); }

 private:
  struct Lane {
    CudaExecutor* exec = nullptr;
    std::unique_ptr<CudaExecutor> own;  ///< lanes after the first
    uint64_t ticket = 0;                ///< frame in flight, 0: none
  };
  /// Finishes lane's frame in flight into done_.
  void finish(Lane& lane);

  CudaExecutor& base_;
  std::vector<Lane> lanes_;
  size_t next_ = 0;
  uint64_t next_ticket_ = 1;
  std::map<uint64_t, std::vector<detect::Detection>> done_;
};

}  // namespace yoloc::runtime::cuda
