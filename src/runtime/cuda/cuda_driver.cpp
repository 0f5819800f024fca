#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "core/error.h"

namespace yoloc::runtime::cuda {
namespace {

#define YOLOC_CUDA_STR2(x) #x
#define YOLOC_CUDA_STR(x) YOLOC_CUDA_STR2(x)

template <typename Fn>
void resolve(DriverApi& api, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(api.handle, symbol));
  if (!fn) {
    user_error(
        "the CUDA driver {} lacks {} (CUDA {}.{} API): the NVIDIA driver is older than "
        "the CUDA toolkit yoloc was built with; update the driver",
        api.library, symbol, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
  }
}

// The loaded driver, or why it could not be loaded; set once.
struct ProcessDriver {
  std::once_flag once;
  std::shared_ptr<const DriverApi> api;
  std::string error;
};

ProcessDriver& process_driver() {
  static ProcessDriver d;
  return d;
}

std::string error_text(const DriverApi* api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api && api->cuGetErrorName) api->cuGetErrorName(r, &name);
  if (api && api->cuGetErrorString) api->cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error";
  s += " (" + std::to_string(static_cast<int>(r)) + ")";
  if (text) s += std::string(": ") + text;
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    s += " - the loaded libcuda is the toolkit's link stub, not an NVIDIA driver";
  }
  return s;
}

// Destructors cannot report: the error is dropped (the driver may already be shutting down).
template <typename... Args, typename Fn>
void release(Fn DriverApi::*fn, Args... args) {
  const ProcessDriver& d = process_driver();
  if (d.api) (d.api.get()->*fn)(args...);
}

}  // namespace

std::shared_ptr<const DriverApi> load_driver_api(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    user_error(
        "no CUDA driver ({}) found: {}. The CUDA target needs an NVIDIA GPU with its "
        "driver installed (set YOLOC_LIBCUDA to the library's path if it is elsewhere); "
        "use another target on this machine",
        path, why ? why : "dlopen failed");
  }
  auto api = std::make_shared<DriverApi>();
  api->library = path;
  api->handle = handle;
#define YOLOC_CUDA_RESOLVE(name) resolve(*api, YOLOC_CUDA_STR(name), api->name);
  YOLOC_CUDA_DRIVER_FUNCTIONS(YOLOC_CUDA_RESOLVE)
#undef YOLOC_CUDA_RESOLVE
  return api;
}

const DriverApi& driver() {
  ProcessDriver& d = process_driver();
  std::call_once(d.once, [&d] {
    const char* env = std::getenv("YOLOC_LIBCUDA");
    try {
      auto api = load_driver_api(env && *env ? env : "libcuda.so.1");
      check(api.get(), api->cuInit(0), "cuInit(0)");
      d.api = std::move(api);
    } catch (const UserError& e) {
      d.error = e.what();
    }
  });
  if (!d.api) throw UserError(d.error);
  return *d.api;
}

void check(const DriverApi* api, CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) user_error("CUDA driver call {} failed: {}", call, error_text(api, r));
}

int device_count_or_zero() {
  try {
    const DriverApi& api = driver();
    int n = 0;
    return api.cuDeviceGetCount(&n) == CUDA_SUCCESS ? n : 0;
  } catch (const UserError&) {
    return 0;
  }
}

// --- Context ------------------------------------------------------------------------------------

Context::Context(int ordinal) {
  const DriverApi& api = driver();
  int count = 0;
  YOLOC_CU(cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count) {
    user_error("CUDA device {} does not exist: this machine has {} CUDA device(s)", ordinal, count);
  }
  YOLOC_CU(cuDeviceGet(&dev_, ordinal));
  YOLOC_CU(cuDevicePrimaryCtxRetain(&ctx_, dev_));
  check(&api, api.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  const auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    check(&api, api.cuDeviceGetAttribute(&v, a, dev_), "cuDeviceGetAttribute");
    return v;
  };
  info_.ordinal = ordinal;
  char name[256] = {};
  YOLOC_CU(cuDeviceGetName(name, sizeof(name) - 1, dev_));
  info_.name = name;
  info_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info_.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info_.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  size_t total = 0;
  YOLOC_CU(cuDeviceTotalMem(&total, dev_));
  info_.total_memory = total;
}

Context::~Context() {
  if (ctx_) release(&DriverApi::cuDevicePrimaryCtxRelease, dev_);
}

void Context::make_current() const { YOLOC_CU(cuCtxSetCurrent(ctx_)); }

void Context::synchronize() const { YOLOC_CU(cuCtxSynchronize()); }

// --- Module -------------------------------------------------------------------------------------

Module::Module(const std::string& image) {
  // PTX must be NUL-terminated; a cubin is an ELF image whose size the driver reads from it.
  std::string copy = image;
  copy.push_back('\0');
  YOLOC_CU(cuModuleLoadData(&mod_, copy.data()));
}

Module::~Module() {
  if (mod_) release(&DriverApi::cuModuleUnload, mod_);
}

CUfunction Module::function(const std::string& name) const {
  const DriverApi& api = driver();
  CUfunction fn = nullptr;
  const CUresult r = api.cuModuleGetFunction(&fn, mod_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) user_error("the CUDA module has no kernel '{}'", name);
  check(&api, r, ("cuModuleGetFunction('" + name + "')").c_str());
  return fn;
}

void set_max_dynamic_shared(CUfunction fn, int bytes) {
  YOLOC_CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
}

LaunchDims fit_to_device(CUfunction fn, LaunchDims d) {
  if (!d.persistent) return d;
  int per_sm = 0, sms = 0;
  CUdevice dev = 0;
  YOLOC_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, fn, static_cast<int>(d.block[0] * d.block[1] * d.block[2]), d.shared_bytes));
  YOLOC_CU(cuCtxGetDevice(&dev));
  YOLOC_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  if (per_sm < 1) user_error("a persistent kernel fits no multiprocessor of this GPU");
  d.grid[0] = std::min(d.grid[0], static_cast<unsigned>(per_sm * sms));
  return d;
}

void launch(CUfunction fn, const LaunchDims& d, void** args, const Stream* stream) {
  if (d.programmatic) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = d.grid[0];
    config.gridDimY = d.grid[1];
    config.gridDimZ = d.grid[2];
    config.blockDimX = d.block[0];
    config.blockDimY = d.block[1];
    config.blockDimZ = d.block[2];
    config.sharedMemBytes = d.shared_bytes;
    config.hStream = stream ? stream->get() : nullptr;
    config.attrs = &attr;
    config.numAttrs = 1;
    YOLOC_CU(cuLaunchKernelEx(&config, fn, args, nullptr));
    return;
  }
  YOLOC_CU(cuLaunchKernel(fn, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2],
                          d.shared_bytes, stream ? stream->get() : nullptr, args, nullptr));
}

// --- memory -------------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) YOLOC_CU(cuMemAlloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) release(&DriverApi::cuMemFree, ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) release(&DriverApi::cuMemFree, ptr_);
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host) {
  if (bytes_) YOLOC_CU(cuMemcpyHtoD(ptr_, host, bytes_));
}

void DeviceBuffer::download(void* host) const {
  if (bytes_) YOLOC_CU(cuMemcpyDtoH(host, ptr_, bytes_));
}

void DeviceBuffer::upload_async(const void* host, const Stream& s) {
  if (bytes_) YOLOC_CU(cuMemcpyHtoDAsync(ptr_, host, bytes_, s.get()));
}

void DeviceBuffer::download_async(void* host, const Stream& s) const {
  if (bytes_) YOLOC_CU(cuMemcpyDtoHAsync(host, ptr_, bytes_, s.get()));
}

void DeviceBuffer::fill_bytes(uint8_t value) {
  if (bytes_) YOLOC_CU(cuMemsetD8(ptr_, value, bytes_));
}

HostBuffer::HostBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) YOLOC_CU(cuMemAllocHost(&ptr_, bytes));
}

HostBuffer::~HostBuffer() {
  if (ptr_) release(&DriverApi::cuMemFreeHost, ptr_);
}

// --- streams, events, graphs --------------------------------------------------------------------

Stream::Stream() { YOLOC_CU(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING)); }

Stream::~Stream() {
  if (stream_) release(&DriverApi::cuStreamDestroy, stream_);
}

void Stream::synchronize() const { YOLOC_CU(cuStreamSynchronize(stream_)); }

void Stream::wait(const Event& event) const {
  YOLOC_CU(cuStreamWaitEvent(stream_, event.get(), CU_EVENT_WAIT_DEFAULT));
}

void Stream::begin_capture() {
  YOLOC_CU(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
}

Graph Stream::end_capture() {
  CUgraph graph = nullptr;
  YOLOC_CU(cuStreamEndCapture(stream_, &graph));
  CUgraphExec exec = nullptr;
  const DriverApi& api = driver();
  const CUresult r = api.cuGraphInstantiate(&exec, graph, 0);
  if (r != CUDA_SUCCESS) {
    api.cuGraphDestroy(graph);
    check(&api, r, "cuGraphInstantiate");
  }
  return Graph(graph, exec);
}

Event::Event() { YOLOC_CU(cuEventCreate(&event_, CU_EVENT_DEFAULT)); }

Event::~Event() {
  if (event_) release(&DriverApi::cuEventDestroy, event_);
}

void Event::record(const Stream& s) { YOLOC_CU(cuEventRecord(event_, s.get())); }

void Event::synchronize() const { YOLOC_CU(cuEventSynchronize(event_)); }

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  YOLOC_CU(cuEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

Graph::~Graph() {
  if (exec_) release(&DriverApi::cuGraphExecDestroy, exec_);
  if (graph_) release(&DriverApi::cuGraphDestroy, graph_);
}

Graph::Graph(Graph&& o) noexcept
    : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)) {}

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    if (exec_) release(&DriverApi::cuGraphExecDestroy, exec_);
    if (graph_) release(&DriverApi::cuGraphDestroy, graph_);
    graph_ = std::exchange(o.graph_, nullptr);
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

void Graph::launch(const Stream& s) const { YOLOC_CU(cuGraphLaunch(exec_, s.get())); }

}  // namespace yoloc::runtime::cuda
