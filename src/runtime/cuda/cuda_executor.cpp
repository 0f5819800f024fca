#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "runtime/cuda/gpu_detect.h"

namespace yoloc::runtime::cuda {
namespace {

/// Parses "sm_90" / "sm_90a" into 90; 0 when malformed.
int arch_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return 0;
  int n = 0;
  for (size_t i = 3; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i)
    n = n * 10 + (arch[i] - '0');
  return n;
}

/// A cubin runs on devices of its major version with the same or a later minor version.
void check_arch(const std::string& arch, const DeviceInfo& d, const std::string& where) {
  const int a = arch_number(arch);
  const bool ok = a / 10 == d.cc_major && a % 10 <= d.cc_minor;
  if (!ok)
    user_error("artifact '{}' holds kernels for {}, which do not run on GPU {} ({}, {}); "
               "recompile the model with `yoloc compile --target cuda --arch {}`",
               where, arch, d.ordinal, d.name, d.arch(), d.arch());
}

/// The plan of the network's launches over at most max_streams streams; one stream when an
/// artifact does not say what its launches write.
StreamPlan network_stream_plan(const CudaProgram& p, int max_streams) {
  const auto access = launch_accesses(p);
  return access ? plan_streams(*access, max_streams)
                : plan_streams(std::vector<LaunchAccess>(p.launches.size()), 1);
}

}  // namespace

/// The GPU detection pipeline: its kernels, buffers and the captured graph for one frame
/// capacity.
struct CudaExecutor::DetectState {
  std::unique_ptr<GpuDetect> gpu;
  std::unique_ptr<Graph> graph;
  int capacity_w = 0, capacity_h = 0;
};

CudaExecutor::CudaExecutor(std::shared_ptr<const artifact::Artifact> artifact, int device)
    : artifact_(std::move(artifact)) {
  const std::string& where = artifact_->path();
  program_ = parse_cuda_program(artifact_->manifest(), where);
  if (device < 0) user_error("--device {}: GPU ordinals start at 0", device);
  const int count = device_count_or_zero();
  if (device >= count)
    user_error("GPU {} does not exist: this machine has {} CUDA device(s){}", device, count,
               count == 0 ? " (no NVIDIA driver or GPU found)" : "");
  context_ = std::make_shared<Context>(device);
  check_arch(program_.arch, context_->info(), where);
  auto modules = std::make_shared<std::vector<std::unique_ptr<Module>>>();
  for (const std::string& name : program_.modules) {
    const auto bytes = artifact_->blob(name);
    modules->push_back(std::make_unique<Module>(
        std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  }
  modules_ = std::move(modules);
  const auto w = artifact_->blob("weights");
  auto weights = std::make_shared<DeviceBuffer>(w.size());
  weights->upload(w.data());
  weights_ = std::move(weights);
  // Programmatic dependent launch: each network kernel but the first (whose predecessor may be
  // a copy or the pre-processing) may be launched while the previous one ends. YOLOC_CUDA_PDL=0
  // turns it off (to measure what it gains).
  const char* pdl_env = std::getenv("YOLOC_CUDA_PDL");
  pdl_ = program_.pdl && context_->info().cc_major >= 9 &&
         !(pdl_env && std::string(pdl_env) == "0");
  const char* streams_env = std::getenv("YOLOC_CUDA_STREAMS");
  const int streams = streams_env ? std::atoi(streams_env) : kNetworkStreams;
  if (streams < 1 || streams > 16)
    user_error("YOLOC_CUDA_STREAMS={}: expected the number of streams, 1 to 16", streams_env);
  plan_ = network_stream_plan(program_, streams);
  prepare_lane();
}

CudaExecutor::CudaExecutor(const CudaExecutor& base, LaneTag)
    : artifact_(base.artifact_),
      program_(base.program_),
      context_(base.context_),
      modules_(base.modules_),
      weights_(base.weights_),
      pdl_(base.pdl_),
      plan_(base.plan_) {
  context_->make_current();
  prepare_lane();
}

std::unique_ptr<CudaExecutor> CudaExecutor::make_lane() const {
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(*this, LaneTag{}));
}

void CudaExecutor::prepare_lane() {
  const std::string& where = artifact_->path();
  arena_ = DeviceBuffer(program_.arena_bytes);
  arena_.fill_bytes(0);
  std::vector<bool> stream_used(static_cast<size_t>(plan_.streams), false);
  for (size_t j = 0; j < program_.launches.size(); ++j) {
    const CudaLaunch& l = program_.launches[j];
    const StreamStep& step = plan_.steps[j];
    Bound b;
    b.fn = modules_->at(static_cast<size_t>(l.module))->function(l.symbol);
    if (l.shared_bytes > 48 * 1024) set_max_dynamic_shared(b.fn, static_cast<int>(l.shared_bytes));
    // Programmatic only after a kernel of its own stream and no other (an event's wait is a
    // full dependency).
    const auto su = static_cast<size_t>(step.stream);
    b.dims = fit_to_device(b.fn, {l.grid, l.block, l.shared_bytes,
                                  pdl_ && stream_used[su] && step.waits.empty(), l.persistent});
    stream_used[su] = true;
    events_.push_back(step.signals ? std::make_unique<Event>() : nullptr);
    for (const Binding& a : l.args) {
      CUdeviceptr p = 0;
      if (a.buffer == kArena) p = arena_.ptr() + a.offset;
      if (a.buffer == "weights") p = weights_->ptr() + a.offset;
      YOLOC_CHECK(a.buffer == kArena || a.buffer == "weights" || a.buffer == kNullBuffer,
                  "launch {} binds the buffer '{}', which a CUDA program does not have", l.symbol,
                  a.buffer);
      b.values.push_back(p);
    }
    launches_.push_back(std::move(b));
  }
  // The parameter arrays point into `values`, which no longer moves.
  for (Bound& b : launches_) {
    for (CUdeviceptr& v : b.values) b.params.push_back(&v);
  }
  stream_ = std::make_unique<Stream>();
  if (plan_.streams > 1) {
    fork_ = std::make_unique<Event>();
    for (int k = 1; k < plan_.streams; ++k) {
      aux_streams_.push_back(std::make_unique<Stream>());
      joins_.push_back(std::make_unique<Event>());
    }
  }
  const artifact::Manifest& m = manifest();
  for (size_t i = 0; i < m.inputs.size(); ++i)
    host_inputs_.push_back(std::make_unique<HostBuffer>(spec_bytes(m.inputs[i], where)));
  for (size_t i = 0; i < m.outputs.size(); ++i)
    host_outputs_.push_back(std::make_unique<HostBuffer>(spec_bytes(m.outputs[i], where)));

  stream_->begin_capture();
  enqueue_network(*stream_);
  network_graph_ = std::make_unique<Graph>(stream_->end_capture());
  stream_->begin_capture();
  for (size_t i = 0; i < m.inputs.size(); ++i)
    YOLOC_CU(cuMemcpyHtoDAsync(arena_.ptr() + program_.input_offsets[i], host_inputs_[i]->data(),
                               host_inputs_[i]->bytes(), stream_->get()));
  enqueue_network(*stream_);
  for (size_t i = 0; i < m.outputs.size(); ++i)
    YOLOC_CU(cuMemcpyDtoHAsync(host_outputs_[i]->data(), arena_.ptr() + program_.output_offsets[i],
                               host_outputs_[i]->bytes(), stream_->get()));
  run_graph_ = std::make_unique<Graph>(stream_->end_capture());
}

CudaExecutor::~CudaExecutor() = default;

void CudaExecutor::enqueue_network(const Stream& s, size_t count) const {
  if (fork_) {
    fork_->record(s);
    for (const auto& aux : aux_streams_) aux->wait(*fork_);
  }
  for (size_t j = 0; j < std::min(count, launches_.size()); ++j) {
    const StreamStep& step = plan_.steps[j];
    const Stream& on = step.stream == 0 ? s : *aux_streams_[static_cast<size_t>(step.stream - 1)];
    for (int w : step.waits) on.wait(*events_[static_cast<size_t>(w)]);
    const Bound& b = launches_[j];
    launch(b.fn, b.dims, const_cast<void**>(b.params.data()), &on);
    if (step.signals) events_[j]->record(on);
  }
  for (size_t k = 0; k < aux_streams_.size(); ++k) {
    joins_[k]->record(*aux_streams_[k]);
    s.wait(*joins_[k]);
  }
}

std::vector<Tensor> CudaExecutor::run(const std::vector<Tensor>& inputs) {
  const artifact::Manifest& m = manifest();
  check_run_inputs(m, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.nbytes() > 0) std::memcpy(host_inputs_[i]->data(), t.raw(), t.nbytes());
  }
  context_->make_current();
  run_graph_->launch(*stream_);
  stream_->synchronize();
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const artifact::TensorSpec& spec = m.outputs[i];
    Tensor t(dtype_from_name(spec.dtype), spec.shape);
    if (t.nbytes() > 0) std::memcpy(t.raw(), host_outputs_[i]->data(), t.nbytes());
    outputs.push_back(std::move(t));
  }
  return outputs;
}

std::vector<double> CudaExecutor::time_network(int warmup, int iters) {
  context_->make_current();
  for (int i = 0; i < warmup; ++i) network_graph_->launch(*stream_);
  stream_->synchronize();
  std::vector<double> ms;
  Event start, stop;
  for (int i = 0; i < iters; ++i) {
    start.record(*stream_);
    network_graph_->launch(*stream_);
    stop.record(*stream_);
    stop.synchronize();
    ms.push_back(stop.elapsed_ms_since(start));
  }
  return ms;
}

std::vector<double> CudaExecutor::profile_launches() {
  context_->make_current();
  enqueue_network(*stream_);  // warm: first launches load the code
  stream_->synchronize();
  std::vector<double> ms;
  Event start, stop;
  for (const Bound& b : launches_) {
    LaunchDims alone = b.dims;
    alone.programmatic = false;
    start.record(*stream_);
    launch(b.fn, alone, const_cast<void**>(b.params.data()), stream_.get());
    stop.record(*stream_);
    stop.synchronize();
    ms.push_back(stop.elapsed_ms_since(start));
  }
  return ms;
}

std::vector<double> CudaExecutor::time_queued(const Graph& graph, int samples, int replays) {
  for (int i = 0; i < 3; ++i) graph.launch(*stream_);
  std::vector<double> per_replay;
  Event start, stop;
  for (int k = 0; k < samples; ++k) {
    start.record(*stream_);
    for (int i = 0; i < replays; ++i) graph.launch(*stream_);
    stop.record(*stream_);
    stop.synchronize();
    per_replay.push_back(stop.elapsed_ms_since(start) / replays);
  }
  return per_replay;
}

std::vector<double> CudaExecutor::time_network_queued(int samples, int replays) {
  context_->make_current();
  return time_queued(*network_graph_, samples, replays);
}

std::vector<std::vector<double>> CudaExecutor::profile_prefixes(int samples, int replays) {
  context_->make_current();
  std::vector<std::vector<double>> ms;
  for (size_t n = 1; n <= launches_.size(); ++n) {
    stream_->begin_capture();
    enqueue_network(*stream_, n);
    const Graph prefix = stream_->end_capture();
    ms.push_back(time_queued(prefix, samples, replays));
  }
  return ms;
}

void CudaExecutor::prepare_detect(int width, int height) {
  if (pending_images_ > 0)
    user_error("a detection started with start_detect() is still running on this executor; "
               "call finish_detect() before writing the next frames");
  if (detect_ && width <= detect_->capacity_w && height <= detect_->capacity_h) return;
  const artifact::Manifest& m = manifest();
  if (m.outputs.empty() || m.inputs.size() != 1)
    user_error("artifact '{}' is not a one-input detector", artifact_->path());
  auto d = std::make_unique<DetectState>();
  // Room for the frame and a little more, so a stream of similar frames captures once.
  d->capacity_w = std::max(width, detect_ ? detect_->capacity_w : 0);
  d->capacity_h = std::max(height, detect_ ? detect_->capacity_h : 0);
  detect_.reset();
  d->gpu = std::make_unique<GpuDetect>(
      *modules_->at(static_cast<size_t>(program_.detect_module)), *program_.detect,
      arena_.ptr() + program_.input_offsets[0], arena_.ptr() + program_.output_offsets[0],
      d->capacity_w, d->capacity_h, FrameSource::kZeroCopy);
  stream_->begin_capture();
  d->gpu->enqueue_preprocess(*stream_);
  enqueue_network(*stream_);
  d->gpu->enqueue_postprocess(*stream_);
  d->graph = std::make_unique<Graph>(stream_->end_capture());
  detect_ = std::move(d);
}

int CudaExecutor::detect_batch() const {
  if (!can_detect())
    user_error("artifact '{}' holds no GPU detection kernels (it was compiled with --outputs); "
               "run its raw outputs instead",
               artifact_->path());
  return program_.detect->batch;
}

void CudaExecutor::launch_detect(size_t images, float conf, float iou, int max_det) {
  if (pending_images_ > 0)
    user_error("a detection started on this executor is not finished; call finish_detect() first");
  detect_->gpu->set_thresholds(conf, iou, std::min(max_det, program_.detect->max_det_cap));
  detect_->graph->launch(*stream_);
  pending_images_ = images;
}

std::vector<std::vector<detect::Detection>> CudaExecutor::finish_detect() {
  if (pending_images_ == 0) user_error("no detection was started on this executor");
  context_->make_current();
  stream_->synchronize();
  std::vector<std::vector<detect::Detection>> out;
  for (size_t b = 0; b < pending_images_; ++b)
    out.push_back(detect_->gpu->detections(static_cast<int>(b)));
  pending_images_ = 0;
  return out;
}

std::vector<std::vector<detect::Detection>> CudaExecutor::detect(
    std::span<const detect::Image> images, float conf, float iou, int max_det) {
  start_detect(images, conf, iou, max_det);
  return finish_detect();
}

void CudaExecutor::start_detect(std::span<const detect::Image> images, float conf, float iou,
                                int max_det) {
  const int batch = detect_batch();
  if (images.empty() || static_cast<int>(images.size()) > batch)
    user_error("{} image(s) given; the artifact detects 1 to {} per run", images.size(), batch);
  int w = 0, h = 0;
  for (const detect::Image& img : images) {
    if (img.empty()) user_error("an image to detect in is empty");
    w = std::max(w, img.width);
    h = std::max(h, img.height);
  }
  context_->make_current();
  prepare_detect(w, h);
  for (int b = 0; b < batch; ++b) {
    // Unused batch slots repeat the first image; their detections are dropped.
    detect_->gpu->set_frame(
        b, images[static_cast<size_t>(b) < images.size() ? static_cast<size_t>(b) : 0]);
  }
  launch_detect(images.size(), conf, iou, max_det);
}

uint8_t* CudaExecutor::frame_buffer(int b, int width, int height, size_t* pitch) {
  const int batch = detect_batch();
  if (b < 0 || b >= batch) user_error("frame {} does not exist: the batch is {}", b, batch);
  if (width < 1 || height < 1) user_error("a frame of {}x{} pixels is empty", width, height);
  context_->make_current();
  prepare_detect(width, height);
  *pitch = detect_->gpu->frame_pitch();
  return detect_->gpu->frame_staging(b);
}

std::vector<std::vector<detect::Detection>> CudaExecutor::detect_written(
    const std::vector<std::pair<int, int>>& sizes, float conf, float iou, int max_det) {
  start_detect(sizes, conf, iou, max_det);
  return finish_detect();
}

void CudaExecutor::start_detect(const std::vector<std::pair<int, int>>& sizes, float conf,
                                float iou, int max_det) {
  const int batch = detect_batch();
  if (sizes.empty() || static_cast<int>(sizes.size()) > batch || !detect_)
    user_error("{} frame(s) given; write 1 to {} frames with frame_buffer() first", sizes.size(),
               batch);
  for (int b = 0; b < batch; ++b) {
    const auto [w, h] = sizes[static_cast<size_t>(b) < sizes.size() ? static_cast<size_t>(b) : 0];
    if (w > detect_->capacity_w || h > detect_->capacity_h)
      user_error("frame {} of {}x{} is larger than the frame buffer ({}x{})", b, w, h,
                 detect_->capacity_w, detect_->capacity_h);
    detect_->gpu->set_frame_size(b, w, h);
  }
  context_->make_current();
  launch_detect(sizes.size(), conf, iou, max_det);
}

void CudaExecutor::launch_network() {
  context_->make_current();
  network_graph_->launch(*stream_);
}

void CudaExecutor::synchronize() {
  context_->make_current();
  stream_->synchronize();
}

uint64_t CudaExecutor::device_bytes() const {
  uint64_t n = arena_.bytes() + weights_->bytes();
  if (detect_) {
    const GpuDetectSpec& s = detect_->gpu->spec();
    n += s.workspace_bytes + s.result_bytes +
         static_cast<uint64_t>(s.batch) * detect_->capacity_w * detect_->capacity_h * 3;
  }
  return n;
}

}  // namespace yoloc::runtime::cuda
