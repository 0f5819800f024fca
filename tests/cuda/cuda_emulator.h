#pragma once
/// Runs generated CUDA kernels (conv, SPPF) on the CPU, so their indexing, pipeline and epilogue
/// are tested where there is no GPU. The kernel source is compiled by the host compiler after a
/// host version of the prelude's device part (see codegen/cuda/cuda_emit.h): every CUDA thread of a
/// block is a fiber (a ucontext) on the calling thread, and a barrier's waiters yield until the
/// last one arrives, so a barrier some threads never reach is reported as a deadlock instead of
/// hanging; the blocks of one thread-block cluster (CudaKernel::cluster) run
/// together, clusters one after the other; __syncthreads is a barrier of the block,
/// barrier.cluster one of the cluster, and ld.shared::cluster reads the shared memory of the
/// block of the given rank at the same offset; ldmatrix and mma.sync are
/// warp-collective exchanges computed from the PTX ISA's fragment layouts; cp.async copies are
/// queued and land only at the cp.async.wait_group that covers them, so a kernel that reads a
/// tile before waiting for it reads the sentinel NaNs shared memory starts with; a wgmma (warpgroup
/// MMA, A from registers or by a shared-memory descriptor, B by a descriptor) is computed at the
/// yc_wgmma_wait that covers it, reading its shared-memory operands then (a copy into their bytes
/// before that is reported, and so is an ldmatrix into its A fragment's array: the GPU reads those
/// registers until the wait). Misaligned
/// or out-of-range shared-memory accesses by cp.async / ldmatrix are reported as errors.
///
/// A persistent kernel (CudaKernel::persistent) runs with its grid's x capped at
/// kPersistentBlocks, as on a GPU that holds that many of its blocks at once, so that each block
/// walks several tiles.
///
/// Generic kernels (GenericTemplate), which use no shared memory and no barrier, run in a fast
/// mode instead: the threads of the grid one after another on the calling thread.
///
/// What it cannot show: PTX syntax and register constraints (NVRTC checks those), timing, and
/// whether the fragment layouts it implements are the hardware's (the GPU tests check that).
#include <string>
#include <vector>

#include "codegen/cuda/conv_task.h"
#include "codegen/cuda/generic_template.h"
#include "runtime/kernel_library.h"

namespace yoloc::codegen::cuda::testing {

class EmulatedKernels {
 public:
  static constexpr unsigned kPersistentBlocks = 3;

  /// Builds the kernels (each CudaKernel::source, as emitted) into one shared object.
  explicit EmulatedKernels(const std::vector<CudaKernel>& kernels);

  /// A host buffer: cp.async may read only inside the buffers given to launch.
  struct Buffer {
    const void* data = nullptr;
    size_t bytes = 0;
  };
  /// Runs kernel k over its grid with the conv kernel parameters (host buffers; bias holds K
  /// floats; up empty without an upsampled copy). Returns "" or the first error the emulation
  /// detected.
  std::string launch(const CudaKernel& k, Buffer x, Buffer w, const float* bias, Buffer res,
                     void* y, size_t y_bytes, Buffer up) const;
  std::string launch(const CudaKernel& k, Buffer x, Buffer w, const float* bias, Buffer res,
                     void* y, size_t y_bytes) const {
    return launch(k, x, w, bias, res, y, y_bytes, Buffer{});
  }
  /// Runs kernel k over its grid with `args`, its parameters in order (host buffers, which the
  /// kernel may write). Returns "" or the first error the emulation detected.
  std::string launch(const CudaKernel& k, const std::vector<Buffer>& args) const;

 private:
  runtime::KernelLibrary lib_;
};

class EmulatedGenericKernels {
 public:
  /// Builds the kernels of `kernels` (one source, its launches) into one shared object; several
  /// tasks' kernels may be joined (sources appended, launches listed).
  explicit EmulatedGenericKernels(const GenericKernels& kernels);

  /// Runs launch k over its grid, thread after thread, with `args`: the kernel's parameters in
  /// order (host pointers). Returns "" or what went wrong.
  std::string launch(const CudaKernel& k, const std::vector<void*>& args) const;

 private:
  runtime::KernelLibrary lib_;
};

}  // namespace yoloc::codegen::cuda::testing
