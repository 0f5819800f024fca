#include "runtime/opencl/cl_device.h"

#include <fmt/format.h>

#include <cstdlib>
#include <regex>

#include "core/error.h"

namespace yoloc::runtime::opencl {
namespace {

std::string platform_info(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (cl_api().clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  cl_api().clGetPlatformInfo(p, what, n, s.data(), nullptr);
  return s.c_str();
}

std::string device_info(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (cl_api().clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  cl_api().clGetDeviceInfo(d, what, n, s.data(), nullptr);
  return s.c_str();
}

std::string listing(const std::vector<ClDevice>& devices) {
  if (devices.empty()) return "this machine has no OpenCL device (install one's driver: PoCL "
                              "for the CPU, or the GPU vendor's)";
  std::string s = "the devices are";
  for (const ClDevice& d : devices) s += fmt::format(" [{}] {}", d.ordinal, d.str());
  return s;
}

}  // namespace

std::string ClDevice::str() const {
  return fmt::format("{}:{} {} ({}, driver {}, {})", platform_index, device_index, name,
                     platform_name, driver, version);
}

std::vector<ClDevice> list_devices() {
  const ClApi& cl = cl_api();
  cl_uint np = 0;
  const cl_int s = cl.clGetPlatformIDs(0, nullptr, &np);
  if (s == -1001 || np == 0) return {};  // CL_PLATFORM_NOT_FOUND_KHR: an ICD loader, no driver
  cl_check(s, "listing the OpenCL platforms");
  std::vector<cl_platform_id> platforms(np);
  cl_check(cl.clGetPlatformIDs(np, platforms.data(), nullptr), "listing the OpenCL platforms");
  std::vector<ClDevice> out;
  for (cl_uint p = 0; p < np; ++p) {
    cl_uint nd = 0;
    if (cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ids(nd);
    cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, ids.data(), nullptr);
    for (cl_uint d = 0; d < nd; ++d) {
      ClDevice dev;
      dev.platform = platforms[p];
      dev.id = ids[d];
      dev.platform_index = static_cast<int>(p);
      dev.device_index = static_cast<int>(d);
      dev.ordinal = static_cast<int>(out.size());
      dev.platform_name = platform_info(platforms[p], CL_PLATFORM_NAME);
      dev.name = device_info(ids[d], CL_DEVICE_NAME);
      dev.driver = device_info(ids[d], CL_DRIVER_VERSION);
      dev.version = device_info(ids[d], CL_DEVICE_VERSION);
      out.push_back(std::move(dev));
    }
  }
  return out;
}

ClDevice select_device(int ordinal) {
  const std::vector<ClDevice> devices = list_devices();
  const char* env = std::getenv("YOLOC_OPENCL_DEVICE");
  if (env && *env) {
    std::smatch m;
    const std::string spec = env;
    if (std::regex_match(spec, m, std::regex(R"((\d+):(\d+))"))) {
      for (const ClDevice& d : devices)
        if (d.platform_index == std::stoi(m[1]) && d.device_index == std::stoi(m[2])) return d;
      user_error("YOLOC_OPENCL_DEVICE={}: there is no such OpenCL device; {}", spec, listing(devices));
    }
    if (!std::regex_match(spec, std::regex(R"(\d{1,6})")))
      user_error("YOLOC_OPENCL_DEVICE={}: give a device as P:D (device D of platform P) or an "
                 "index N; {}",
                 spec, listing(devices));
    ordinal = std::stoi(spec);
  }
  if (ordinal < 0 || ordinal >= static_cast<int>(devices.size()))
    user_error("OpenCL device {} is not there; {}", ordinal, listing(devices));
  return devices[static_cast<size_t>(ordinal)];
}

}  // namespace yoloc::runtime::opencl
