#include "runtime/cuda/pipelined_detect.h"

#include <span>

#include "core/error.h"

namespace yoloc::runtime::cuda {

PipelinedDetect::PipelinedDetect(CudaExecutor& base, int in_flight) : base_(base) {
  if (in_flight < 1) user_error("{} frames in flight: at least 1 is needed", in_flight);
  if (!base.can_detect())
    user_error("this CUDA artifact holds no GPU detection kernels (it was compiled with "
               "--outputs); it cannot detect");
  lanes_.resize(static_cast<size_t>(in_flight));
  lanes_[0].exec = &base;
}

void PipelinedDetect::finish(Lane& lane) {
  done_[lane.ticket] = lane.exec->finish_detect().at(0);
  lane.ticket = 0;
}

uint64_t PipelinedDetect::submit(const detect::Image& image, float conf, float iou,
                                 int max_det) {
  if (image.empty() || image.bgr.size() != static_cast<size_t>(image.width) * image.height * 3)
    user_error("the image is empty or its pixel buffer does not match {}x{}x3", image.width,
               image.height);
  Lane& lane = lanes_[next_];
  next_ = (next_ + 1) % lanes_.size();
  if (!lane.exec) {
    lane.own = base_.make_lane();
    lane.exec = lane.own.get();
  }
  if (lane.ticket != 0) finish(lane);
  lane.exec->start_detect(std::span(&image, 1), conf, iou, max_det);
  lane.ticket = next_ticket_++;
  return lane.ticket;
}

void PipelinedDetect::drain() {
  for (Lane& lane : lanes_)
    if (lane.ticket != 0) finish(lane);
}

std::vector<detect::Detection> PipelinedDetect::wait(uint64_t ticket) {
  if (done_.find(ticket) == done_.end()) {
    for (Lane& lane : lanes_) {
      if (lane.ticket == ticket && ticket != 0) finish(lane);
    }
  }
  const auto it = done_.find(ticket);
  if (it == done_.end())
    user_error("detection ticket {} is unknown or was already waited for", ticket);
  std::vector<detect::Detection> out = std::move(it->second);
  done_.erase(it);
  return out;
}

}  // namespace yoloc::runtime::cuda
