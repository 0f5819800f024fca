#pragma once
/// Pre- and post-processing of detection on the GPU, runtime side: enqueues the kernels that
/// codegen/cuda/detect_kernels emits (compiled into a Module at compile time) around the network,
/// so that one CUDA graph captures the whole inference:
///
///   frame geometry upload, [frame upload], pre-processing kernel           enqueue_preprocess
///   ... the network's kernels (the executor's) ...
///   thresholds upload, decode, rank (sort), NMS, result download (pinned)  enqueue_postprocess
///
/// The enqueue functions neither allocate nor synchronise, so they can be captured once and
/// replayed for every frame: what changes between frames (the frame's pixels and size, the
/// thresholds) lives in pinned host memory that the graph reads when it runs. The host writes
/// it (set_frame, set_thresholds) before launching and reads the result (detections) after the
/// stream is done.
#include <cstdint>
#include <string>
#include <vector>

#include "artifact/cuda_detect_params.h"
#include "artifact/cuda_program.h"
#include "detect/decode.h"
#include "detect/family.h"
#include "yoloc/image.h"
#include "detect/preprocess.h"
#include "runtime/cuda/cuda_driver.h"

namespace yoloc::runtime::cuda {

using artifact::cuda::DetectKernelLaunch;
using artifact::cuda::GpuDetectSpec;
using artifact::cuda::YcDetection;
using artifact::cuda::YcDetectParams;
using artifact::cuda::YcImageParams;

/// The placement of a frame of img_w x img_h in the network input, for the family's
/// pre-processing (Ultralytics letterbox: detect::letterbox_geometry; YOLOX: top-left paste),
/// and the transform that maps boxes back onto the frame.
struct FramePlacement {
  int new_w = 0, new_h = 0, left = 0, top = 0;
  detect::BoxTransform transform;
};
FramePlacement frame_placement(detect::Family family, int img_w, int img_h, int input_w,
                               int input_h);

/// Where the pre-processing kernel reads frames from.
enum class FrameSource {
  /// The graph copies the whole pinned staging area (batch x capacity) to a device buffer, then
  /// the kernel reads it there. The copy's size is fixed, so a large capacity costs time.
  kDeviceCopy,
  /// The kernel reads the pinned staging area directly over the bus (unified addressing): only
  /// the pixels the resize needs are transferred, and there is no copy node.
  kZeroCopy,
};

/// Runs the detection kernels of `spec` from `module` around a network whose input (the tensor
/// the pre-processing writes, in the layout and dtype the kernels were emitted for) and head
/// output lie at the given device addresses.
class GpuDetect {
 public:
  /// Allocates every buffer (frames up to capacity_w x capacity_h pixels per batch item).
  /// Raises a UserError when the module lacks a kernel of the spec or the capacity is not
  /// positive. The thresholds start at conf 0.25, iou 0.45, max_det min(300, max_det_cap).
  GpuDetect(const Module& module, GpuDetectSpec spec, CUdeviceptr network_input,
            CUdeviceptr head_output, int capacity_w, int capacity_h,
            FrameSource source = FrameSource::kDeviceCopy);
  GpuDetect(const GpuDetect&) = delete;
  GpuDetect& operator=(const GpuDetect&) = delete;

  /// Sets the score threshold, NMS IoU threshold and detections per image. Raises a UserError
  /// for thresholds outside [0, 1] or max_det outside [1, max_det_cap].
  void set_thresholds(float conf, float iou, int max_det);

  /// Copies `img` into the pinned staging of batch item b and sets its geometry. Raises a
  /// UserError when b is out of range, or the image is empty or larger than the capacity.
  void set_frame(int b, const detect::Image& img);
  /// The pinned staging of batch item b (rows of frame_pitch() bytes, BGR), for a caller that
  /// writes the pixels itself (a decoder, a camera); then set_frame_size(b, w, h).
  uint8_t* frame_staging(int b);
  size_t frame_pitch() const { return static_cast<size_t>(capacity_w_) * 3; }
  void set_frame_size(int b, int img_w, int img_h);

  /// Enqueues the frame geometry upload, the frame upload (FrameSource::kDeviceCopy) and the
  /// pre-processing kernel on `stream`. Capturable: no allocation, no synchronisation.
  void enqueue_preprocess(const Stream& stream) const;
  /// Enqueues the thresholds upload, decoding, sorting, NMS and the download of the result
  /// into pinned memory.
  /// Capturable.
  void enqueue_postprocess(const Stream& stream) const;

  /// After the enqueued work completed: the detections of batch item b in network-input
  /// pixels, by score descending.
  std::vector<detect::Detection> raw_detections(int b) const;
  /// The same mapped onto the frame set for b (detect::map_to_image), as the CPU pipeline's.
  std::vector<detect::Detection> detections(int b) const;

  const GpuDetectSpec& spec() const { return spec_; }

 private:
  struct FrameInfo {
    int w = 0, h = 0;
    detect::BoxTransform transform;
  };
  void check_item(int b, const char* what) const;
  YcDetectParams& params() const;
  YcImageParams& image_params(int b) const;

  GpuDetectSpec spec_;
  CUfunction pre_fn_ = nullptr, decode_fn_ = nullptr, rank_fn_ = nullptr, nms_fn_ = nullptr;
  CUdeviceptr input_ = 0, head_ = 0;
  int capacity_w_ = 0, capacity_h_ = 0;
  FrameSource source_;
  HostBuffer params_host_;
  DeviceBuffer params_dev_;
  HostBuffer frames_host_;
  DeviceBuffer frames_dev_;  // empty with FrameSource::kZeroCopy
  DeviceBuffer workspace_;
  DeviceBuffer result_dev_;
  HostBuffer result_host_;
  std::vector<FrameInfo> frames_;
};

}  // namespace yoloc::runtime::cuda
