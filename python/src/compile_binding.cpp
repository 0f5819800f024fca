#include "compile_binding.h"

#include <nanobind/stl/string.h>

#include "core/error.h"
#include "yoloc/compiler.h"

namespace yoloc::python {

namespace {

bool flag(const std::string& name, const std::string& value) {
  if (value == "True" || value == "true" || value == "1") return true;
  if (value == "False" || value == "false" || value == "0") return false;
  throw UserError("compile: option " + name + "='" + value + "' must be True or False");
}

}  // namespace

nanobind::dict compile_model(const std::string& model, const std::string& output,
                             const std::string& target, const std::string& precision, int batch,
                             int imgsz, const std::string& family, const std::string& records,
                             const std::map<std::string, std::string>& options) {
  CompileOptions o;
  o.model.batch = batch;
  o.model.imgsz = imgsz;
  o.model.family = family;
  o.model.precision = precision;
  o.output = output;
  o.target = target;
  o.records = records;
  for (const auto& [name, value] : options) {
    if (name == "arch") o.arch = value;
    else if (name == "io_precision") o.model.io_precision = value;
    else if (name == "lanes") o.model.lanes = value;
    else if (name == "isa") o.isa = value;
    else if (name == "cc") o.cc = value;
    else if (name == "sign") o.sign_key = value;
    else if (name == "b2b") o.b2b = value;
    else if (name == "memory_reuse") o.memory_reuse = value;
    else if (name == "stem_pair") o.stem_pair = flag(name, value);
    else if (name == "no_cache") o.no_cache = flag(name, value);
    else if (name == "no_records") o.no_records = flag(name, value);
    else if (name == "force") o.force = flag(name, value);
    else
      throw UserError("compile: unknown option '" + name +
                      "'; the options are yoloc compile's long options (see yoloc compile --help)");
  }
  CompileReport r;
  {
    nanobind::gil_scoped_release release;
    r = yoloc::compile(model, o);
  }
  nanobind::dict d;
  d["target"] = r.target;
  d["artifact_bytes"] = r.artifact_bytes;
  d["seconds"] = r.seconds;
  d["kernels"] = r.kernels.size();
  d["tuned"] = r.tuned;
  return d;
}

}  // namespace yoloc::python
