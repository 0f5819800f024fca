#include "codegen/cuda/detect_head_fusion.h"

#include "codegen/cuda/detect_tail_template.h"
#include "codegen/cuda/kernels/embedded.h"

namespace yoloc::codegen::cuda {

bool detect_fusion_fits(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  // Class scores: an NCHW output of the last conv (no activation, residual or upsampled copy)
  // whose map fits its planes.
  const ConvTask& last = task.b2b ? task.second_stage().conv : t;
  const bool last_nchw = task.b2b ? task.b2b->out_nchw : task.out_nchw;
  if (task.scores &&
      !(last_nchw && last.act == Activation::kNone && !last.residual && !task.up &&
        task.scores->base >= 0 && task.scores->base + last.oh * last.ow <= task.scores->plane))
    return false;
  // Boxes: a pair whose second stage (no activation) is the whole dense S x R logits map of a
  // level that lies within the tail's anchors (a tail DetectTailTemplate takes, as
  // detect_tail_task_from_group makes them; valid() runs for every candidate of a tuning run, so
  // that is not checked again here).
  if (task.boxes) {
    const DetectTailTask* d = task.boxes->tail.get();
    if (!task.b2b || task.scores || !d) return false;
    const B2bStage& b = *task.b2b;
    if (b.act != Activation::kNone || b.k != d->sides * d->bins ||
        !(b.out == ChannelSlice{b.k, 0}) || task.boxes->base < 0 ||
        task.boxes->base + t.oh * t.ow > d->anchors || t.n != d->n)
      return false;
  }
  return true;
}

std::string fused_boxes_declarations(const CudaConvTask& task) {
  if (!task.boxes) return "";
  return "namespace dfl {\n" + detect_box_unit_source(*task.boxes->tail) + "}  // namespace dfl\n";
}

const char* fused_boxes_param(const CudaConvTask& task) {
  return task.boxes ? ", const float* __restrict__ dfl_table" : "";
}

const char* fused_boxes_table(const CudaConvTask& task) {
  return task.boxes ? "dfl_table" : "nullptr";
}

const char* fused_boxes_store(const CudaConvTask& task) {
  return task.boxes ? cuh::detect_fused_boxes : "";
}

}  // namespace yoloc::codegen::cuda
