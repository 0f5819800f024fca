#pragma once
/// The detect-head fusions of the tensor-core conv template (tc_conv_template.h): the detect
/// tail's work done by the head convs as they store their outputs.
///
/// Class scores (CudaConvTask::scores): the last conv of the class branch (a b2b pair's second
/// stage) stores the sigmoid of its logits straight into the detector's output, an NCHW plane per
/// class from anchor `base` on (conv_common_source's epilogue, yc_act_sigmoid).
///
/// Boxes (CudaConvTask::boxes): a b2b pair whose second stage computes a level's S x R DFL box
/// logits stages them in shared memory (the staged epilogue, epi=1) and, once the tile is
/// staged, a thread per pixel runs the detect tail's box unit (detect_box_unit_source) on its
/// logits and stores the box channels into the detector's output (kernels/detect_fused_boxes.cuh).
/// The kernel then takes the tail's table after bias2.
#include <string>

#include "codegen/cuda/conv_task.h"

namespace yoloc::codegen::cuda {

/// True when the task's fused stores fit it (true without scores and boxes): class scores need an
/// NCHW output of the last conv without activation, residual or upsampled copy whose map fits its
/// planes; boxes need a b2b pair without scores whose second stage (no activation) is the whole
/// dense S x R logits map of a level within the tail's anchors.
bool detect_fusion_fits(const CudaConvTask& task);

/// (boxes) The box unit's declarations in namespace dfl, after the second stage's; else "".
std::string fused_boxes_declarations(const CudaConvTask& task);

/// (boxes) The kernel's parameter after bias2, the tail's table; else "".
const char* fused_boxes_param(const CudaConvTask& task);

/// (boxes) What b2b_tail passes as the table: "dfl_table", else "nullptr".
const char* fused_boxes_table(const CudaConvTask& task);

/// (boxes) The end of b2b_store_staged once the tile is staged: the box decode; else "".
const char* fused_boxes_store(const CudaConvTask& task);

}  // namespace yoloc::codegen::cuda
