#pragma once
/// The CUDA driver API, loaded at run time: libcuda.so.1 is opened with dlopen at first use, so
/// yoloc links and starts on machines without an NVIDIA driver and only the first CUDA call
/// fails, with a UserError that says so. Only the types of the toolkit's cuda.h are used at build
/// time; nothing links against libcuda or libcudart.
///
/// Every call goes through check(), which names the call and the driver's error. The RAII types
/// below own one driver object each; they must be destroyed while their Context lives (the
/// Context is the primary context of its device, made current on the creating thread).
#include <cuda.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "artifact/cuda_program.h"

namespace yoloc::runtime::cuda {

// The driver entry points yoloc uses. cuda.h maps many names to their current ABI version
// (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime -> cuEventElapsedTime_v2, ...); the list is
// expanded after those macros, so each member is the versioned function with its exact type and
// is looked up under its versioned symbol name.
#define YOLOC_CUDA_DRIVER_FUNCTIONS(X)                                                            \
  X(cuInit)                                                                                       \
  X(cuDriverGetVersion)                                                                           \
  X(cuGetErrorName)                                                                               \
  X(cuGetErrorString)                                                                             \
  X(cuDeviceGetCount)                                                                             \
  X(cuDeviceGet)                                                                                  \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)      \
      X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize)      \
          X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute)      \
              X(cuFuncGetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                \
                  X(cuCtxGetDevice) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuMemAlloc)           \
                      X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoD)             \
                          X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8) \
                              X(cuMemsetD8Async) X(cuStreamCreate) X(cuStreamDestroy)             \
                                  X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuEventCreate)    \
                                      X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)    \
                                          X(cuEventElapsedTime) X(cuStreamBeginCapture)           \
                                              X(cuStreamEndCapture) X(cuGraphInstantiate)         \
                                                  X(cuGraphLaunch) X(cuGraphExecDestroy)          \
                                                      X(cuGraphDestroy)

/// The resolved driver functions. Members carry cuda.h's names (which the header may turn into
/// versioned ones), so `api.cuMemAlloc(&p, n)` reads like the C API.
struct DriverApi {
#define YOLOC_CUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  YOLOC_CUDA_DRIVER_FUNCTIONS(YOLOC_CUDA_DRIVER_MEMBER)
#undef YOLOC_CUDA_DRIVER_MEMBER
  std::string library;  ///< what was opened
  void* handle = nullptr;
};

/// Opens the driver library `path` (a name for the dynamic loader's search, or a path) and
/// resolves every function; does not call cuInit. Raises a UserError "no CUDA driver
/// (libcuda.so.1) found: ..." when it cannot be opened, and one naming the missing symbol when
/// the driver is older than the API yoloc was built against. The library stays loaded.
std::shared_ptr<const DriverApi> load_driver_api(const std::string& path = "libcuda.so.1");

/// The process's driver: load_driver_api() of $YOLOC_LIBCUDA (default libcuda.so.1) followed by
/// cuInit(0), done once; later calls return the same table. Raises the loader's UserError (at
/// every call, so a process without a driver can carry on without CUDA).
const DriverApi& driver();

/// Raises a UserError "<call> failed: CUDA_ERROR_X (n): <driver's description>" when r is not
/// CUDA_SUCCESS. `api` supplies the error strings (nullptr: numeric code only).
void check(const DriverApi* api, CUresult r, const char* call);

/// Checks a call through driver(): YOLOC_CU(cuMemAlloc(&p, n)) calls driver().cuMemAlloc and
/// raises a UserError naming "cuMemAlloc" on failure.
#define YOLOC_CU(call)                                                                         \
  do {                                                                                         \
    const ::yoloc::runtime::cuda::DriverApi& yoloc_cu_api_ = ::yoloc::runtime::cuda::driver(); \
    ::yoloc::runtime::cuda::check(&yoloc_cu_api_, yoloc_cu_api_.call, #call);                  \
  } while (0)

/// The number of CUDA devices, 0 when there is no driver or no device (never raises).
int device_count_or_zero();

/// What kernels and tuning need to know of a device.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
  int max_shared_per_block_optin = 0;  ///< bytes of dynamic shared memory a kernel may opt into
  int l2_bytes = 0;
  uint64_t total_memory = 0;
  /// "sm_90" for NVRTC.
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

/// The primary context of one device, retained and made current on the creating thread.
class Context {
 public:
  /// Retains device `ordinal`'s primary context. Raises a UserError when there is no driver or
  /// no such device.
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// Makes the context current on the calling thread.
  void make_current() const;
  /// Waits for all work of the context.
  void synchronize() const;
  const DeviceInfo& info() const { return info_; }
  CUcontext get() const { return ctx_; }

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceInfo info_;
};

/// A loaded cubin or PTX image.
class Module {
 public:
  /// Loads `image` (a cubin, or NUL-terminated PTX text); the driver copies it.
  explicit Module(const std::string& image);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The kernel `name` (its extern "C" symbol); raises a UserError naming it when absent.
  CUfunction function(const std::string& name) const;
  CUmodule get() const { return mod_; }

 private:
  CUmodule mod_ = nullptr;
};

/// Lets `fn` use `bytes` of dynamic shared memory (needed above 48 KiB).
void set_max_dynamic_shared(CUfunction fn, int bytes);

/// Launch geometry of one kernel (the artifact's: launches are part of the program).
using artifact::cuda::LaunchDims;

/// d for fn on the current device: a persistent kernel's grid x capped at occupancy x
/// multiprocessors (after fn's dynamic shared memory limit is set); other dims as they are.
/// Called once where a function meets its dims, not per launch.
LaunchDims fit_to_device(CUfunction fn, LaunchDims d);

class Stream;
/// Launches fn with `args` (pointers to each argument's value) on `stream` (nullptr: the
/// context's default stream).
void launch(CUfunction fn, const LaunchDims& dims, void** args, const Stream* stream = nullptr);

/// Device memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  /// Copies bytes() from / to host memory (synchronous).
  void upload(const void* host);
  void download(void* host) const;
  /// Asynchronous copies on `stream` (host memory should be pinned: HostBuffer).
  void upload_async(const void* host, const Stream& stream);
  void download_async(void* host, const Stream& stream) const;
  /// Sets every byte to `value` (synchronous).
  void fill_bytes(uint8_t value);

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// Page-locked host memory, for asynchronous copies.
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Graph;
class Event;

/// A non-blocking stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void synchronize() const;
  /// Makes later work on this stream wait for `event`'s last record (a graph dependency while
  /// capturing).
  void wait(const Event& event) const;
  /// Starts recording the work issued on this stream into a graph (thread-local capture mode).
  void begin_capture();
  /// Ends the recording and instantiates it.
  Graph end_capture();
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
};

/// A timing event.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& stream);
  void synchronize() const;
  /// Milliseconds from `start` to this event (both recorded and completed).
  float elapsed_ms_since(const Event& start) const;
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
};

/// A captured and instantiated CUDA graph.
class Graph {
 public:
  Graph(CUgraph graph, CUgraphExec exec) : graph_(graph), exec_(exec) {}
  ~Graph();
  Graph(Graph&& o) noexcept;
  Graph& operator=(Graph&& o) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// Replays the graph on `stream`.
  void launch(const Stream& stream) const;

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace yoloc::runtime::cuda
