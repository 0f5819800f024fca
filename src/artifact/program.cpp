#include "artifact/program.h"

#include "core/dtype.h"
#include "core/error.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::artifact {

using nlohmann::json;

void ProgramReader::fail(const std::string& field, const std::string& what) const {
  user_error(
      "artifact '{}': the program field '{}' {}; the file is corrupt or was written by "
      "an incompatible yoloc: recompile the model",
      where, field, what);
}

const json& ProgramReader::at(const json& obj, const std::string& path,
                              const std::string& key) const {
  if (!obj.is_object()) fail(path, "is not an object");
  auto it = obj.find(key);
  if (it == obj.end()) fail(path + "." + key, "is missing");
  return *it;
}

uint64_t ProgramReader::uint(const json& obj, const std::string& path,
                             const std::string& key) const {
  const json& v = at(obj, path, key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    fail(path + "." + key, "is not a non-negative integer");
  return v.get<uint64_t>();
}

std::string ProgramReader::str(const json& obj, const std::string& path,
                               const std::string& key) const {
  const json& v = at(obj, path, key);
  if (!v.is_string()) fail(path + "." + key, "is not a string");
  return v.get<std::string>();
}

const json& ProgramReader::array(const json& obj, const std::string& path,
                                 const std::string& key) const {
  const json& v = at(obj, path, key);
  if (!v.is_array()) fail(path + "." + key, "is not an array");
  return v;
}

std::string json_item(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void ProgramReader::check_inside(const std::string& field, uint64_t offset, uint64_t bytes,
                                 uint64_t size, const std::string& buffer) const {
  if (offset > size || bytes > size - offset)
    fail(field, "spans bytes [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                    std::to_string(bytes) + ") outside the " + buffer + " of " +
                    std::to_string(size) + " bytes");
}

std::vector<uint64_t> ProgramReader::tensor_offsets(const json& prog, const std::string& key,
                                                    const std::vector<TensorSpec>& specs,
                                                    uint64_t arena) const {
  const json& a = array(prog, "program", key);
  if (a.size() != specs.size())
    fail("program." + key, "has " + std::to_string(a.size()) + " entries for " +
                               std::to_string(specs.size()) + " model " + key);
  std::vector<uint64_t> out;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string path = json_item("program." + key, i);
    const uint64_t off = uint(a[i], path, "offset");
    check_inside(path, off, spec_bytes(specs[i], where), arena, "arena");
    out.push_back(off);
  }
  return out;
}

Binding ProgramReader::binding(const json& obj, const std::string& path,
                               const Manifest& m, uint64_t arena) const {
  Binding b{str(obj, path, "buffer"), uint(obj, path, "offset"), uint(obj, path, "bytes")};
  uint64_t size = arena;
  if (b.buffer != kArena) {
    const artifact::BlobEntry* blob = m.find_blob(b.buffer);
    if (!blob) fail(path + ".buffer", "names the blob '" + b.buffer + "', which is absent");
    size = blob->size;
  }
  check_inside(path, b.offset, b.bytes, size, b.buffer);
  return b;
}

uint64_t spec_bytes(const TensorSpec& spec, const std::string& where) {
  const DType t = dtype_from_name(spec.dtype);
  if (t == DType::kUndefined)
    user_error("artifact '{}': tensor '{}' has the unknown element type '{}'; recompile the model",
               where, spec.name, spec.dtype);
  uint64_t n = dtype_size(t);
  for (int64_t d : spec.shape) {
    if (d < 0 || (d > 0 && n > (uint64_t{1} << 48) / static_cast<uint64_t>(d)))
      user_error(
          "artifact '{}': tensor '{}' has the unusable dimension {}; the runtime needs "
          "static shapes: recompile the model",
          where, spec.name, d);
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

Program parse_program(const Manifest& m, const std::string& where) {
  const ProgramReader r{where};
  const json& prog = m.program;
  if (!prog.is_object() || prog.empty())
    user_error(
        "artifact '{}' holds no program to run (target '{}'); compile the model with "
        "`yoloc compile --target cpu`",
        where, m.target);
  const uint64_t abi = r.uint(prog, "program", "abi");
  if (abi != YOLOC_KERNEL_ABI_VERSION)
    user_error(
        "artifact '{}' was built for kernel ABI {}, this runtime speaks ABI {}; recompile "
        "the model with a matching yoloc",
        where, abi, YOLOC_KERNEL_ABI_VERSION);
  Program p;
  p.kernel_blob = r.str(prog, "program", "kernel_blob");
  if (!m.find_blob(p.kernel_blob))
    r.fail("program.kernel_blob", "names the blob '" + p.kernel_blob + "', which is absent");
  p.arena_bytes = r.uint(prog, "program", "arena_bytes");
  p.input_offsets = r.tensor_offsets(prog, "inputs", m.inputs, p.arena_bytes);
  p.output_offsets = r.tensor_offsets(prog, "outputs", m.outputs, p.arena_bytes);
  const json& calls = r.array(prog, "program", "calls");
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string path = json_item("program.calls", i);
    KernelCall c;
    c.symbol = r.str(calls[i], path, "symbol");
    const uint64_t items = r.uint(calls[i], path, "work_items");
    if (items < 1 || items > (uint64_t{1} << 40)) r.fail(path + ".work_items", "is out of range");
    c.work_items = static_cast<int64_t>(items);
    const json& args = r.array(calls[i], path, "args");
    for (size_t k = 0; k < args.size(); ++k) {
      c.args.push_back(r.binding(args[k], json_item(path + ".args", k), m, p.arena_bytes));
    }
    const json& params = r.array(calls[i], path, "params");
    for (size_t k = 0; k < params.size(); ++k) {
      if (!params[k].is_number_integer()) r.fail(json_item(path + ".params", k), "is not an integer");
      c.params.push_back(params[k].get<int64_t>());
    }
    if (auto it = calls[i].find("task"); it != calls[i].end() && it->is_object()) c.task = *it;
    p.calls.push_back(std::move(c));
  }
  return p;
}

nlohmann::json program_to_json(const Program& p) {
  json inputs = json::array(), outputs = json::array(), calls = json::array();
  for (uint64_t o : p.input_offsets) inputs.push_back({{"offset", o}});
  for (uint64_t o : p.output_offsets) outputs.push_back({{"offset", o}});
  for (const KernelCall& c : p.calls) {
    json args = json::array();
    for (const Binding& b : c.args)
      args.push_back({{"buffer", b.buffer}, {"offset", b.offset}, {"bytes", b.bytes}});
    json call = {
        {"symbol", c.symbol}, {"work_items", c.work_items}, {"args", args}, {"params", c.params}};
    if (!c.task.empty()) call["task"] = c.task;
    calls.push_back(std::move(call));
  }
  return {{"abi", YOLOC_KERNEL_ABI_VERSION},
          {"kernel_blob", p.kernel_blob},
          {"arena_bytes", p.arena_bytes},
          {"inputs", inputs},
          {"outputs", outputs},
          {"calls", calls}};
}

}  // namespace yoloc::artifact
