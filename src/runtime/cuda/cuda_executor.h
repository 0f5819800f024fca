#pragma once
/// Runs a CUDA artifact's program (cuda_program.h) through the driver API only: loads its
/// cubins, uploads the weights once, owns one device arena (activations, inputs, scratch) and
/// pinned host buffers, and replays CUDA graphs captured once:
///   - the network alone (device memory in, device memory out): network_graph;
///   - run(): input upload, the network, output download;
///   - detect(): frame upload, GPU pre-processing, the network, decoding and NMS, download of
///     the detections (when the artifact holds the detection kernels).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "artifact/artifact_reader.h"
#include "yoloc/tensor.h"
#include "detect/decode.h"
#include "yoloc/image.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/stream_plan.h"

namespace yoloc::runtime::cuda {

class CudaExecutor {
 public:
  /// Prepares `artifact` on GPU `device`. Raises a UserError when there is no driver or no such
  /// device, when the artifact's arch does not run on the device (naming both), or for a
  /// malformed program.
  CudaExecutor(std::shared_ptr<const artifact::Artifact> artifact, int device);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  /// Runs the network on host tensors matching the manifest's inputs (a UserError says which
  /// does not) and returns its outputs. Not reentrant.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  /// Replays the network alone (inputs as they are in device memory) `iters` times after
  /// `warmup` replays; the GPU time of each replay in milliseconds (CUDA events).
  std::vector<double> time_network(int warmup, int iters);

  /// True when the artifact holds the GPU pre- and post-processing kernels.
  bool can_detect() const { return program_.detect.has_value(); }
  /// Detects objects in up to batch images (one CUDA graph: upload, pre-processing, network,
  /// decoding, NMS, download); detections per image mapped onto it. Raises a UserError without
  /// the detection kernels or for more images than the batch.
  std::vector<std::vector<detect::Detection>> detect(std::span<const detect::Image> images,
                                                     float conf, float iou, int max_det);

  /// Pinned host memory to write batch item b's frame of width x height BGR pixels into (rows
  /// of *pitch bytes), so that a decoder or camera fills it and detect_written() copies
  /// nothing on the host. Valid until a call with a larger frame.
  uint8_t* frame_buffer(int b, int width, int height, size_t* pitch);
  /// detect() of the frames written into frame_buffer(): sizes[b] = {width, height}.
  std::vector<std::vector<detect::Detection>> detect_written(
      const std::vector<std::pair<int, int>>& sizes, float conf, float iou, int max_det);
  /// detect() / detect_written() without waiting: copies the images into the pinned frame
  /// buffers (the first form), launches the detection graph on this executor's stream and
  /// returns; finish_detect() waits for it and returns the detections. Until then the frame
  /// buffers must not be written (frame_buffer() and detect() refuse).
  void start_detect(std::span<const detect::Image> images, float conf, float iou, int max_det);
  void start_detect(const std::vector<std::pair<int, int>>& sizes, float conf, float iou,
                    int max_det);
  std::vector<std::vector<detect::Detection>> finish_detect();

  /// Another executor of the same artifact on the same GPU that shares this one's context,
  /// kernels and weights but has its own arena, stream, pinned buffers and CUDA graphs: work on
  /// several such lanes runs concurrently (overlapping one frame's upload and pre-processing
  /// with another's network, or several batches' kernels).
  std::unique_ptr<CudaExecutor> make_lane() const;
  /// Launches the network graph on this executor's stream without waiting (synchronize()).
  void launch_network();
  void synchronize();

  /// Times each launch alone (events around it, not in a graph) over one run of the network:
  /// milliseconds per launch, program order.
  std::vector<double> profile_launches();
  /// The network's time inside its CUDA graph, launch by launch: entry i holds the GPU times
  /// per replay (`samples` of them) of a graph holding launches 0..i only (same streams,
  /// dependencies and programmatic launches as the network graph), each sample replaying it
  /// back to back `replays` times so that the host's launch cost overlaps the GPU's work. The
  /// median of entry i minus that of entry i - 1 is what launch i adds to the network's latency
  /// (about zero for a kernel off the critical path). Milliseconds, program order.
  std::vector<std::vector<double>> profile_prefixes(int samples, int replays);
  /// The network graph replayed back to back `replays` times per sample: the GPU time per replay
  /// of each sample, without the host's launch cost that time_network() includes.
  std::vector<double> time_network_queued(int samples, int replays);

  const artifact::Manifest& manifest() const { return artifact_->manifest(); }
  const CudaProgram& program() const { return program_; }
  const DeviceInfo& device() const { return context_->info(); }
  /// True when the network's kernels are launched with programmatic dependent launch (an
  /// sm_90+ artifact on an sm_90+ device, unless YOLOC_CUDA_PDL=0).
  bool programmatic_launch() const { return pdl_; }
  /// The streams the network's kernels are spread over (1: one after the other; see
  /// stream_plan.h; YOLOC_CUDA_STREAMS caps it, default kNetworkStreams).
  int network_streams() const { return plan_.streams; }
  static constexpr int kNetworkStreams = 8;
  /// Bytes of device memory this executor allocated (arena, weights, detection buffers).
  uint64_t device_bytes() const;

 private:
  struct LaneTag {};
  CudaExecutor(const CudaExecutor& base, LaneTag);
  /// The per-lane state: arena, bound launches, stream, host buffers, graphs.
  void prepare_lane();
  void launch_detect(size_t images, float conf, float iou, int max_det);

  struct Bound {
    CUfunction fn = nullptr;
    LaunchDims dims;
    std::vector<CUdeviceptr> values;
    std::vector<void*> params;  ///< pointers to values
  };
  /// Issues the network's first `count` launches (all by default) on `s` and its aux streams.
  void enqueue_network(const Stream& s, size_t count = SIZE_MAX) const;
  /// GPU time per replay of `graph` replayed back to back, per sample (profile_prefixes).
  std::vector<double> time_queued(const Graph& graph, int samples, int replays);
  void prepare_detect(int width, int height);
  int detect_batch() const;

  std::shared_ptr<const artifact::Artifact> artifact_;
  CudaProgram program_;
  // Shared by the lanes of one executor (make_lane).
  std::shared_ptr<Context> context_;
  std::shared_ptr<const std::vector<std::unique_ptr<Module>>> modules_;
  std::shared_ptr<const DeviceBuffer> weights_;
  // This lane's.
  DeviceBuffer arena_;
  std::vector<Bound> launches_;
  bool pdl_ = false;
  std::unique_ptr<Stream> stream_;
  // The network's kernels over stream_ and aux_streams_: aux stream k is stream k + 1 of plan_;
  // events_[j] is recorded after launch j when another stream waits for it; fork_ starts the
  // aux streams after what stream_ holds, joins_ end them into stream_.
  StreamPlan plan_;
  std::vector<std::unique_ptr<Stream>> aux_streams_;
  std::vector<std::unique_ptr<Event>> events_, joins_;
  std::unique_ptr<Event> fork_;
  std::vector<std::unique_ptr<HostBuffer>> host_inputs_, host_outputs_;
  std::unique_ptr<Graph> network_graph_, run_graph_;
  struct DetectState;
  std::unique_ptr<DetectState> detect_;
  size_t pending_images_ = 0;  ///< images of a started, unfinished detection
};

}  // namespace yoloc::runtime::cuda
