#include "runtime/opencl/opencl_executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/build_cache.h"
#include "core/error.h"

namespace yoloc::runtime::opencl {
namespace {

constexpr const char* kBuildOptions = "-cl-std=CL1.2";

std::string build_log(cl_program p, cl_device_id d) {
  size_t n = 0;
  cl_api().clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) cl_api().clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  return log.c_str();
}

/// The ordinal of the blob named `name` among the ones a binding may name.
cl_mem buffer_of(const std::string& name, cl_mem arena, cl_mem weights, const std::string& where) {
  if (name == kArena) return arena;
  if (name == "weights") return weights;
  user_error("'{}': an OpenCL call binds the blob '{}'; only the arena and the weights are "
             "device buffers",
             where, name);
}

}  // namespace

OpenClExecutor::OpenClExecutor(std::shared_ptr<const artifact::Artifact> artifact, int device)
    : artifact_(std::move(artifact)) {
  const std::string& where = artifact_->path();
  program_ = parse_program(artifact_->manifest(), where);
  device_ = select_device(device);
  const ClApi& cl = cl_api();
  cl_int s = CL_SUCCESS;
  context_ = cl.clCreateContext(nullptr, 1, &device_.id, nullptr, nullptr, &s);
  cl_check(s, fmt::format("creating an OpenCL context on {}", device_.str()));
  queue_ = cl.clCreateCommandQueue(context_, device_.id, 0, &s);
  cl_check(s, "creating an OpenCL queue");
  const auto src = artifact_->blob(program_.kernel_blob);
  build_program(std::string(reinterpret_cast<const char*>(src.data()), src.size()));

  arena_ = cl.clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<uint64_t>(program_.arena_bytes, 4),
                             nullptr, &s);
  cl_check(s, fmt::format("allocating the {}-byte arena of '{}'", program_.arena_bytes, where));
  const auto w = artifact_->blob("weights");
  weights_ = cl.clCreateBuffer(context_, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, w.size(),
                               const_cast<std::byte*>(w.data()), &s);
  cl_check(s, fmt::format("uploading the {}-byte weights of '{}'", w.size(), where));
  // The arena starts zeroed (as the CPU executor's): padding a kernel skips stays defined.
  const std::vector<char> zeros(program_.arena_bytes, 0);
  if (!zeros.empty())
    cl_check(cl.clEnqueueWriteBuffer(queue_, arena_, CL_TRUE, 0, zeros.size(), zeros.data(), 0,
                                     nullptr, nullptr),
             "clearing the arena");
  for (size_t i = 0; i < program_.calls.size(); ++i) {
    const KernelCall& c = program_.calls[i];
    if (c.params.size() != 6)
      user_error("'{}': call {} ({}) has {} params; an OpenCL call has 6 (global and local "
                 "sizes)",
                 where, i, c.symbol, c.params.size());
    for (int d = 0; d < 3; ++d) {
      const int64_t global = c.params[d], local = c.params[3 + d];
      const bool ok = global >= 1 && (c.params[3] == 0 ? local == 0 : local >= 1 && global % local == 0);
      if (!ok)
        user_error("'{}': call {} ({}) has the NDRange {}: each global size must be >= 1 and a "
                   "multiple of its local size (all local sizes 0: the device picks)",
                   where, i, c.symbol, fmt::join(c.params, ","));
    }
    cl_kernel k = cl.clCreateKernel(cl_program_, c.symbol.c_str(), &s);
    cl_check(s, fmt::format("'{}': kernel {}", where, c.symbol));
    kernels_.push_back(k);
    for (size_t a = 0; a < c.args.size(); ++a) {
      const cl_mem m = buffer_of(c.args[a].buffer, arena_, weights_, where);
      if (c.args[a].offset % sizeof(float) != 0 || c.args[a].offset / sizeof(float) > UINT32_MAX)
        user_error("'{}': call {} binds offset {}, not a float offset", where, i, c.args[a].offset);
      const cl_uint off = static_cast<cl_uint>(c.args[a].offset / sizeof(float));
      cl_check(cl.clSetKernelArg(k, static_cast<cl_uint>(2 * a), sizeof(cl_mem), &m),
               fmt::format("binding argument {} of {}", a, c.symbol));
      cl_check(cl.clSetKernelArg(k, static_cast<cl_uint>(2 * a + 1), sizeof(cl_uint), &off),
               fmt::format("binding argument {} of {}", a, c.symbol));
    }
  }
}

OpenClExecutor::~OpenClExecutor() {
  const ClApi& cl = cl_api();
  for (cl_kernel k : kernels_) cl.clReleaseKernel(k);
  if (cl_program_) cl.clReleaseProgram(cl_program_);
  if (arena_) cl.clReleaseMemObject(arena_);
  if (weights_) cl.clReleaseMemObject(weights_);
  if (profiling_queue_) cl.clReleaseCommandQueue(profiling_queue_);
  if (queue_) cl.clReleaseCommandQueue(queue_);
  if (context_) cl.clReleaseContext(context_);
}

void OpenClExecutor::build_program(const std::string& source) {
  const ClApi& cl = cl_api();
  BuildCache& cache = BuildCache::user();
  const std::string key = build_key({"yoloc " YOLOC_VERSION " opencl program",
                                              device_.platform_name, device_.name, device_.driver,
                                              device_.version, kBuildOptions, source});
  cl_int s = CL_SUCCESS;
  const auto from_source = [&] {
    const char* text = source.c_str();
    const size_t len = source.size();
    cl_program p = cl.clCreateProgramWithSource(context_, 1, &text, &len, &s);
    cl_check(s, "creating the OpenCL program");
    const cl_int b = cl.clBuildProgram(p, 1, &device_.id, kBuildOptions, nullptr, nullptr);
    if (b != CL_SUCCESS) {
      std::string log = build_log(p, device_.id);
      cl.clReleaseProgram(p);
      std::replace(log.begin(), log.end(), '\n', ' ');
      user_error("'{}': the OpenCL program does not build on {}: {}", artifact_->path(),
                 device_.str(), log.substr(0, 2000));
    }
    return p;
  };
  cl_program built = nullptr;
  const std::string binary = cache.enabled() ? cache.get_or_build(key, [&] {
    built = from_source();
    size_t size = 0;
    cl_check(cl.clGetProgramInfo(built, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr),
             "reading the program binary size");
    std::string bin(size, '\0');
    unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
    cl_check(cl.clGetProgramInfo(built, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr),
             "reading the program binary");
    return bin;
  }, &from_cache_) : std::string();
  if (built) {
    cl_program_ = built;
    return;
  }
  if (!binary.empty()) {
    const unsigned char* bin = reinterpret_cast<const unsigned char*>(binary.data());
    const size_t len = binary.size();
    cl_int status = CL_SUCCESS;
    cl_program p = cl.clCreateProgramWithBinary(context_, 1, &device_.id, &len, &bin, &status, &s);
    if (s == CL_SUCCESS && status == CL_SUCCESS &&
        cl.clBuildProgram(p, 1, &device_.id, kBuildOptions, nullptr, nullptr) == CL_SUCCESS) {
      cl_program_ = p;
      return;
    }
    if (p) cl.clReleaseProgram(p);  // a binary the driver refuses now: build the source
  }
  from_cache_ = false;
  cl_program_ = from_source();
}

std::vector<Tensor> OpenClExecutor::run(const std::vector<Tensor>& inputs) {
  const ClApi& cl = cl_api();
  const artifact::Manifest& m = manifest();
  check_run_inputs(m, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.nbytes() > 0)
      cl_check(cl.clEnqueueWriteBuffer(queue_, arena_, CL_FALSE, program_.input_offsets[i],
                                       t.nbytes(), t.raw(), 0, nullptr, nullptr),
               "writing an input");
  }
  cl_command_queue q = queue_;
  if (profiling_ && !profiling_queue_) {
    cl_int s = CL_SUCCESS;
    profiling_queue_ =
        cl.clCreateCommandQueue(context_, device_.id, CL_QUEUE_PROFILING_ENABLE, &s);
    cl_check(s, "creating a profiling queue");
  }
  if (profiling_) {
    cl_check(cl.clFinish(queue_), "writing the inputs");
    q = profiling_queue_;
  }
  std::vector<cl_event> events(profiling_ ? kernels_.size() : 0);
  for (size_t i = 0; i < kernels_.size(); ++i) {
    const std::vector<int64_t>& p = program_.calls[i].params;
    const size_t global[3] = {static_cast<size_t>(p[0]), static_cast<size_t>(p[1]),
                              static_cast<size_t>(p[2])};
    const size_t local[3] = {static_cast<size_t>(p[3]), static_cast<size_t>(p[4]),
                             static_cast<size_t>(p[5])};
    cl_check(cl.clEnqueueNDRangeKernel(q, kernels_[i], 3, nullptr, global,
                                       p[3] > 0 ? local : nullptr, 0, nullptr,
                                       profiling_ ? &events[i] : nullptr),
             fmt::format("enqueueing {}", program_.calls[i].symbol));
  }
  if (profiling_) {
    cl_check(cl.clFinish(q), "running the program");
    call_ms_.assign(events.size(), 0.0);
    for (size_t i = 0; i < events.size(); ++i) {
      cl_ulong t0 = 0, t1 = 0;
      cl.clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr);
      cl.clGetEventProfilingInfo(events[i], CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
      call_ms_[i] = static_cast<double>(t1 - t0) * 1e-6;
      cl.clReleaseEvent(events[i]);
    }
  }
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const artifact::TensorSpec& spec = m.outputs[i];
    Tensor t(dtype_from_name(spec.dtype), spec.shape);
    if (t.nbytes() > 0)
      cl_check(cl.clEnqueueReadBuffer(q, arena_, CL_TRUE, program_.output_offsets[i], t.nbytes(),
                                      t.raw(), 0, nullptr, nullptr),
               "reading an output");
    outputs.push_back(std::move(t));
  }
  return outputs;
}

}  // namespace yoloc::runtime::opencl
