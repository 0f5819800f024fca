#pragma once
/// yoloc._yoloc.compile: the compiler library called with the options the Python package takes
/// (the CLI's long options, by name).
#include <map>
#include <string>

#include <nanobind/nanobind.h>

namespace yoloc::python {

/// Compiles `model` (ONNX) into an artifact at `output`; returns the compile report as a dict
/// (target, artifact_bytes, seconds, kernels, tuned). `options` holds the other long options
/// of `yoloc compile` by name ("arch", "io_precision", "isa", "cc", "sign", "no_cache",
/// "force", ...); an unknown name raises yoloc.Error.
nanobind::dict compile_model(const std::string& model, const std::string& output,
                             const std::string& target, const std::string& precision, int batch,
                             int imgsz, const std::string& family, const std::string& records,
                             const std::map<std::string, std::string>& options);

}  // namespace yoloc::python
