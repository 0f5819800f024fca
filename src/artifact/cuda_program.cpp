#include "artifact/cuda_program.h"

#include "core/error.h"

namespace yoloc::artifact::cuda {
namespace {

using nlohmann::json;

std::array<unsigned, 3> dims3(const ProgramReader& r, const json& launch, const std::string& path,
                              const std::string& key, uint64_t max_x) {
  const json& a = r.array(launch, path, key);
  if (a.size() != 3) r.fail(path + "." + key, "does not have 3 entries");
  std::array<unsigned, 3> d{};
  for (size_t i = 0; i < 3; ++i) {
    if (!a[i].is_number_integer() || a[i].get<int64_t>() < 1 ||
        a[i].get<uint64_t>() > (i == 0 ? max_x : 65535))
      r.fail(json_item(path + "." + key, i), "is not a dimension CUDA can launch");
    d[i] = a[i].get<unsigned>();
  }
  return d;
}

json launch_to_json(const DetectKernelLaunch& l) {
  return {{"symbol", l.symbol},
          {"grid", l.dims.grid},
          {"block", l.dims.block},
          {"shared", l.dims.shared_bytes}};
}

DetectKernelLaunch launch_from_json(const ProgramReader& r, const json& obj,
                                    const std::string& path) {
  DetectKernelLaunch l;
  l.symbol = r.str(obj, path, "symbol");
  l.dims.grid = dims3(r, obj, path, "grid", (uint64_t{1} << 31) - 1);
  l.dims.block = dims3(r, obj, path, "block", 1024);
  const uint64_t shared = r.uint(obj, path, "shared");
  if (shared > (uint64_t{1} << 20)) r.fail(path + ".shared", "is out of range");
  l.dims.shared_bytes = static_cast<unsigned>(shared);
  return l;
}

json detect_to_json(const GpuDetectSpec& s, int module) {
  return {{"module", module},
          {"family", std::string(detect::family_name(s.family))},
          {"input_w", s.input_w},
          {"input_h", s.input_h},
          {"batch", s.batch},
          {"max_det_cap", s.max_det_cap},
          {"workspace_bytes", s.workspace_bytes},
          {"result_bytes", s.result_bytes},
          {"result_dets_offset", s.result_dets_offset},
          {"pre", launch_to_json(s.pre)},
          {"decode", launch_to_json(s.decode)},
          {"rank", launch_to_json(s.rank)},
          {"nms", launch_to_json(s.nms)}};
}

GpuDetectSpec detect_from_json(const ProgramReader& r, const json& d, size_t modules,
                               int* module) {
  const std::string path = "program.detect";
  const uint64_t m = r.uint(d, path, "module");
  if (m >= modules) r.fail(path + ".module", "is not a module of the program");
  *module = static_cast<int>(m);
  GpuDetectSpec s;
  try {
    s.family = detect::parse_family(r.str(d, path, "family"));
  } catch (const UserError&) {
    r.fail(path + ".family", "is not a detector family");
  }
  const auto small = [&](const char* key) {
    const uint64_t v = r.uint(d, path, key);
    if (v < 1 || v > (1u << 16)) r.fail(path + "." + key, "is out of range");
    return static_cast<int>(v);
  };
  s.input_w = small("input_w");
  s.input_h = small("input_h");
  s.batch = small("batch");
  s.max_det_cap = small("max_det_cap");
  s.workspace_bytes = r.uint(d, path, "workspace_bytes");
  s.result_bytes = r.uint(d, path, "result_bytes");
  s.result_dets_offset = r.uint(d, path, "result_dets_offset");
  if (s.result_dets_offset > s.result_bytes)
    r.fail(path + ".result_dets_offset", "lies past the result");
  s.pre = launch_from_json(r, r.at(d, path, "pre"), path + ".pre");
  s.decode = launch_from_json(r, r.at(d, path, "decode"), path + ".decode");
  s.rank = launch_from_json(r, r.at(d, path, "rank"), path + ".rank");
  s.nms = launch_from_json(r, r.at(d, path, "nms"), path + ".nms");
  return s;
}

}  // namespace

bool is_cuda_program(const artifact::Manifest& m) {
  return m.program.is_object() && m.program.contains("kind") && m.program["kind"] == "cuda";
}

CudaProgram parse_cuda_program(const artifact::Manifest& m, const std::string& where) {
  const ProgramReader r{where};
  const json& prog = m.program;
  if (!is_cuda_program(m))
    user_error("artifact '{}' holds no CUDA program (target '{}'); compile the model with "
               "`yoloc compile --target cuda`",
               where, m.target);
  CudaProgram p;
  p.arch = r.str(prog, "program", "arch");
  const json& modules = r.array(prog, "program", "modules");
  for (size_t i = 0; i < modules.size(); ++i) {
    if (!modules[i].is_string()) r.fail(json_item("program.modules", i), "is not a string");
    const std::string name = modules[i].get<std::string>();
    if (!m.find_blob(name))
      r.fail(json_item("program.modules", i), "names the blob '" + name + "', which is absent");
    p.modules.push_back(name);
  }
  p.arena_bytes = r.uint(prog, "program", "arena_bytes");
  p.input_offsets = r.tensor_offsets(prog, "inputs", m.inputs, p.arena_bytes);
  p.output_offsets = r.tensor_offsets(prog, "outputs", m.outputs, p.arena_bytes);
  const json& launches = r.array(prog, "program", "launches");
  for (size_t i = 0; i < launches.size(); ++i) {
    const std::string path = json_item("program.launches", i);
    const json& l = launches[i];
    CudaLaunch c;
    const uint64_t module = r.uint(l, path, "module");
    if (module >= p.modules.size()) r.fail(path + ".module", "is not a module of the program");
    c.module = static_cast<int>(module);
    c.symbol = r.str(l, path, "symbol");
    c.grid = dims3(r, l, path, "grid", (uint64_t{1} << 31) - 1);
    c.block = dims3(r, l, path, "block", 1024);
    if (static_cast<uint64_t>(c.block[0]) * c.block[1] * c.block[2] > 1024)
      r.fail(path + ".block", "has more than 1024 threads");
    const uint64_t shared = r.uint(l, path, "shared");
    if (shared > (uint64_t{1} << 20)) r.fail(path + ".shared", "is out of range");
    c.shared_bytes = static_cast<unsigned>(shared);
    if (l.contains("persistent")) {
      if (!l["persistent"].is_boolean()) r.fail(path + ".persistent", "is not a boolean");
      c.persistent = l["persistent"].get<bool>();
    }
    const json& args = r.array(l, path, "args");
    for (size_t k = 0; k < args.size(); ++k) {
      const std::string apath = json_item(path + ".args", k);
      if (r.str(args[k], apath, "buffer") == kNullBuffer) {
        c.args.push_back({kNullBuffer, 0, 0});
        continue;
      }
      c.args.push_back(r.binding(args[k], apath, m, p.arena_bytes));
    }
    if (auto it = l.find("writes"); it != l.end()) {
      if (!it->is_array()) r.fail(path + ".writes", "is not an array of argument indices");
      c.writes.emplace();
      for (const json& w : *it) {
        if (!w.is_number_integer() || w.get<int64_t>() < 0 ||
            w.get<uint64_t>() >= c.args.size())
          r.fail(path + ".writes", "holds " + w.dump() + ", which is not an index of its args");
        c.writes->push_back(w.get<int>());
      }
    }
    if (auto it = l.find("task"); it != l.end() && it->is_object()) c.task = *it;
    p.launches.push_back(std::move(c));
  }
  if (auto it = prog.find("detect"); it != prog.end())
    p.detect = detect_from_json(r, *it, p.modules.size(), &p.detect_module);
  if (auto it = prog.find("pdl"); it != prog.end()) {
    if (!it->is_boolean()) r.fail("program.pdl", "is not a boolean");
    p.pdl = it->get<bool>();
  }
  if (prog.contains("lanes")) {
    const uint64_t lanes = r.uint(prog, "program", "lanes");
    if (lanes < 1 || lanes > p.launches.size() + 1) r.fail("program.lanes", "is out of range");
    p.lanes = static_cast<int>(lanes);
  }
  return p;
}

nlohmann::json cuda_program_to_json(const CudaProgram& p) {
  json inputs = json::array(), outputs = json::array(), launches = json::array();
  for (uint64_t o : p.input_offsets) inputs.push_back({{"offset", o}});
  for (uint64_t o : p.output_offsets) outputs.push_back({{"offset", o}});
  for (const CudaLaunch& c : p.launches) {
    json args = json::array();
    for (const Binding& b : c.args) {
      if (b.buffer == kNullBuffer) {
        args.push_back({{"buffer", kNullBuffer}});
      } else {
        args.push_back({{"buffer", b.buffer}, {"offset", b.offset}, {"bytes", b.bytes}});
      }
    }
    json l = {{"module", c.module}, {"symbol", c.symbol}, {"grid", c.grid},
              {"block", c.block},   {"shared", c.shared_bytes}, {"args", args}};
    if (c.persistent) l["persistent"] = true;
    if (c.writes) l["writes"] = *c.writes;
    if (!c.task.empty()) l["task"] = c.task;
    launches.push_back(std::move(l));
  }
  json out = {{"kind", "cuda"},          {"arch", p.arch},     {"modules", p.modules},
              {"arena_bytes", p.arena_bytes}, {"inputs", inputs}, {"outputs", outputs},
              {"launches", launches}};
  if (p.detect) out["detect"] = detect_to_json(*p.detect, p.detect_module);
  if (p.pdl) out["pdl"] = true;
  if (p.lanes > 1) out["lanes"] = p.lanes;
  return out;
}

}  // namespace yoloc::artifact::cuda
