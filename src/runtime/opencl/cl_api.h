#pragma once
/// The OpenCL API opened at run time: the ICD loader (libOpenCL.so.1, or $YOLOC_OPENCL_LIBRARY)
/// is dlopen'ed on first use and never linked, so a machine without OpenCL still runs every
/// other artifact. Only the types of CL/cl.h are used at build time.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <string>

namespace yoloc::runtime::opencl {

/// The entry points yoloc calls, resolved once.
struct ClApi {
#define YOLOC_CL_FUNCTIONS(X)                                                                    \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)                  \
  X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue)        \
  X(clCreateBuffer) X(clReleaseMemObject) X(clCreateProgramWithSource)                           \
  X(clCreateProgramWithBinary) X(clBuildProgram) X(clGetProgramBuildInfo) X(clGetProgramInfo)    \
  X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg)                     \
  X(clEnqueueNDRangeKernel) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer) X(clFinish)           \
  X(clWaitForEvents) X(clReleaseEvent) X(clGetEventProfilingInfo)
#define YOLOC_CL_MEMBER(name) decltype(&::name) name = nullptr;
  YOLOC_CL_FUNCTIONS(YOLOC_CL_MEMBER)
#undef YOLOC_CL_MEMBER
};

/// The API, loaded on first call. Raises a UserError (one line: what is missing and how to
/// get it) when the library or one of its functions cannot be loaded.
const ClApi& cl_api();

/// Raises a UserError "`what`: OpenCL error <name> (<code>)" unless status is CL_SUCCESS.
void cl_check(cl_int status, const std::string& what);

/// The name of an OpenCL status ("CL_OUT_OF_RESOURCES").
std::string cl_status_name(cl_int status);

}  // namespace yoloc::runtime::opencl
