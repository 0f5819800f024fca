#pragma once
/// What the CUDA kernel templates emit in common: the helper prelude every kernel source starts
/// with, and the constants and fused epilogue of a conv kernel.
///
/// Kernels include no header (NVRTC finds none by itself): the prelude defines the few types
/// and conversions they need with inline PTX. It has two parts. The device part
/// (kCudaDevicePrelude, guarded by YOLOC_CUDA_DEVICE_PRELUDE) holds everything that is CUDA or
/// PTX: the YC_* macros, fp16/bf16 conversions, cp.async, ldmatrix and mma.sync. The common part
/// is plain C++ over those helpers. A host emulation of the kernels (tests) defines
/// YOLOC_CUDA_DEVICE_PRELUDE and its own versions of the device part before the source.
#include <initializer_list>
#include <string>
#include <utility>

#include "codegen/cuda/conv_task.h"

namespace yoloc::codegen::cuda {

/// The device part of the prelude (sm_80 and up).
extern const char* const kCudaDevicePrelude;
/// The portable part: storage types yc_half / yc_bf16, yc_load / yc_store (and their pair
/// forms yc_load2 / yc_store2), yc_vec<T, N> (N elements accessed as one aligned unit),
/// activations yc_act_none / yc_act_relu / yc_act_silu.
extern const char* const kCudaCommonPrelude;

/// kCudaDevicePrelude followed by kCudaCommonPrelude: what a kernel source starts with.
std::string cuda_prelude();

/// "float", "yc_half", "yc_bf16": the prelude's storage type of t.
std::string cuda_storage_type(DType t);

/// The prelude's function of activation `a` for values stored as `out` next: yc_act_none,
/// yc_act_relu, or for SiLU yc_act_silu (fp32: expf and an IEEE division) or, before a 16-bit
/// store, yc_act_silu_fast (ex2.approx and rcp.approx, about 2 ulp of float32: invisible after
/// rounding to 11 or 8 bits, and a fraction of the instructions in every epilogue).
const char* cuda_act_function(Activation a, DType out);

/// The declarations a conv kernel's namespace starts with: the task's sizes as constexprs (N, C,
/// H, W, K, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW; M = N*OH*OW output pixels; KG = KH*KW*C the
/// GEMM depth; IS/IO, OS/OO, RS/RO the strides and offsets of the input, output and residual
/// slices; OUT_NCHW for an output and residual stored NCHW, see CudaConvTask::out_nchw; UP, USH,
/// USW, US/UO for the upsampled copy, see CudaConvTask::up), the types InT and OutT, and
///   epilogue(y, up, res, bias, m, n, v)           one output element (pixel m, channel n)
///   epilogue2(y, up, res, bias, m, n, v0, v1)     channels n and n + 1 (n even)
///   epilogue_vec<NV>(y, up, res, bias, m, n, v)   channels n .. n + NV - 1 (n a multiple of NV)
///                                                 in 16-byte accesses where the slices allow
/// which add the bias, apply the activation, add the residual, convert to OutT and store to y
/// (and, with UP, the same values to each of the pixel's copies in up), for m < M and n < K only.
std::string conv_common_source(const CudaConvTask& t);

/// The sm_90a device code of a kernel that issues yc_wgmma<n, bf16> (see the prelude): the
/// instruction for that N as a specialization of the prelude's template, compiled for sm_90a only
/// (for other targets, and for the host emulation of the tests, it is left out; the kernel says
/// #error for other targets itself). n is a multiple of 8 from 8 to 256.
std::string wgmma_source(int n, bool bf16);

/// A conv template's kernel `symbol` (a C identifier, else InternalError) with its whole
/// source: the prelude, a comment naming the task and `config` (after `label`, e.g. "direct ",
/// when not empty), then namespace <symbol>_ns with conv_common_source(t), then `body` (which
/// closes that namespace and defines the kernel) with each of `subs` replaced in order and
/// @SYM@ by the symbol. The caller sets the launch dimensions.
CudaKernel conv_kernel(const CudaConvTask& t, const std::string& symbol, const std::string& label,
                       const std::string& config, std::string body,
                       std::initializer_list<std::pair<const char*, std::string>> subs);

}  // namespace yoloc::codegen::cuda
