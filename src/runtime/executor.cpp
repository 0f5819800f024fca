#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "runtime/host_check.h"
#include "runtime/kernel_binding.h"
#include "runtime/memory_limit.h"

namespace yoloc::runtime {
namespace {

int checked_threads(int threads) {
  if (threads < 1) user_error("the thread count {} must be at least 1", threads);
  return threads;
}

}  // namespace

void Executor::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

Executor::Executor(std::shared_ptr<const artifact::Artifact> artifact, int threads,
                   uint64_t max_memory)
    : artifact_(std::move(artifact)), pool_(checked_threads(threads)) {
  const std::string& where = artifact_->path();
  program_ = parse_program(artifact_->manifest(), where);
  check_arena_size(program_.arena_bytes, max_memory, where);
  check_kernels_run_here(artifact_->manifest().target, artifact_->blob(program_.kernel_blob), where);
  library_ = std::make_unique<KernelLibrary>(artifact_->blob(program_.kernel_blob));
  const std::vector<yoloc_kernel_fn> fns = bind_kernel_table(program_, library_->table(), where);
  // aligned_alloc wants a size that is a multiple of the alignment (and > 0).
  const uint64_t size = artifact::align_up(std::max<uint64_t>(program_.arena_bytes, 1));
  arena_.reset(static_cast<std::byte*>(std::aligned_alloc(artifact::kBlobAlignment, size)));
  if (!arena_) user_error("cannot allocate the {}-byte arena of '{}'", size, where);
  std::memset(arena_.get(), 0, size);
  for (size_t i = 0; i < program_.calls.size(); ++i) {
    const KernelCall& c = program_.calls[i];
    Bound b;
    b.fn = fns[i];
    for (const Binding& a : c.args) {
      std::byte* base = a.buffer == kArena
                            ? arena_.get()
                            : const_cast<std::byte*>(artifact_->blob(a.buffer).data());
      b.args.push_back(base + a.offset);
    }
    b.params = c.params;
    b.work_items = c.work_items;
    calls_.push_back(std::move(b));
  }
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  const artifact::Manifest& m = manifest();
  check_run_inputs(m, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.nbytes() > 0) std::memcpy(arena_.get() + program_.input_offsets[i], t.raw(), t.nbytes());
  }
  call_ms_.assign(profiling_ ? calls_.size() : 0, 0.0);
  for (size_t i = 0; i < calls_.size(); ++i) {
    const Bound& b = calls_[i];
    void* const* args = b.args.data();
    const int64_t* params = b.params.empty() ? nullptr : b.params.data();
    const auto t0 = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    pool_.parallel_for(b.work_items,
                       [&](int64_t begin, int64_t end) { b.fn(args, params, begin, end); });
    if (profiling_)
      call_ms_[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const artifact::TensorSpec& spec = m.outputs[i];
    Tensor t(dtype_from_name(spec.dtype), spec.shape);
    if (t.nbytes() > 0) std::memcpy(t.raw(), arena_.get() + program_.output_offsets[i], t.nbytes());
    outputs.push_back(std::move(t));
  }
  return outputs;
}

}  // namespace yoloc::runtime
