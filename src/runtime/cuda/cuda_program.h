#pragma once
/// The runtime's view of a CUDA artifact's program: the schema is the artifact's
/// (artifact/cuda_program.h).
#include "artifact/cuda_program.h"
#include "runtime/program.h"

namespace yoloc::runtime::cuda {

using artifact::cuda::CudaLaunch;
using artifact::cuda::CudaProgram;
using artifact::cuda::cuda_program_to_json;
using artifact::cuda::is_cuda_program;
using artifact::cuda::kNullBuffer;
using artifact::cuda::parse_cuda_program;

}  // namespace yoloc::runtime::cuda
