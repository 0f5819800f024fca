#include "codegen/opencl/opencl_compiler.h"

#include <fmt/format.h>

#include "codegen/arena_map.h"
#include "codegen/cpu/emit_util.h"
#include "codegen/opencl/tasks.h"

namespace yoloc::codegen::opencl {
namespace {

uint64_t add_weights(std::string& blob, const std::vector<float>& data) {
  blob.resize(align_to_arena(blob.size()), '\0');
  const uint64_t offset = blob.size();
  blob.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  if (data.empty()) blob.append(sizeof(float), '\0');  // a binding is never empty
  return offset;
}

}  // namespace

OpenClBuild compile_opencl(const Graph& g, const std::map<std::string, ScheduleConfig>& configs) {
  OpenClBuild out;
  out.plan = plan_memory(g);
  verify_memory_plan(out.plan);
  const ArenaMap arena(g, out.plan);
  const StridesOf strides_of = [&](const Value* v) {
    const Shape s = v->type.static_shape();
    std::vector<int64_t> st = cpu::dense_strides(s);
    const ArenaMap::Place p = arena.place(v);
    if (!p.contiguous) {
      // A channel slice of a concat buffer: its images lie one root image apart.
      if (s.empty() || s[0] <= 1)
        user_error("'{}' is a strided view the OpenCL target cannot address; report the model",
                   v->name);
      st[0] = static_cast<int64_t>(p.root_bytes / sizeof(float)) / s[0];
    }
    return st;
  };
  const std::vector<ClTask> tasks = extract_opencl_tasks(g, strides_of);
  Availability avail(g);

  artifact::Program& prog = out.program;
  prog.kernel_blob = kSourceBlob;
  prog.arena_bytes = arena.bytes();
  prog.input_offsets = arena.input_offsets();
  for (const Value* v : g.outputs) {
    if (v->is_constant())
      user_error("the graph output '{}' is a constant; the OpenCL target needs computed outputs",
                 v->name);
    const ArenaMap::Place p = arena.place(v);
    YOLOC_CHECK(p.contiguous, "graph output '{}' is not dense in the arena", v->name);
    prog.output_offsets.push_back(p.offset);
  }
  out.source = kClPrelude;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const ClTask& t = tasks[i];
    cpu::CompiledTask ct{t.key, t.template_name, t.group_name, t.default_config, false};
    if (auto cfg = stored_config(t, configs)) {
      ct.config = *cfg;
      ct.tuned = true;
      ++out.tuned;
    }
    const ClLowered k = t.lower(ct.config, fmt::format("yc_t{}", i));
    std::vector<artifact::Binding> bindings;
    for (const ClArg& a : k.args) {
      if (!a.value) {
        const uint64_t off = add_weights(out.weights, a.data);
        bindings.push_back({kWeightsBlob, off, std::max<uint64_t>(a.data.size(), 1) * sizeof(float)});
        continue;
      }
      if (a.output) {
        avail.written(a.value);
      } else {
        YOLOC_CHECK(avail.available(a.value), "kernel {} ({}) reads '{}' before it is written",
                    i, t.group_name, a.value->name);
      }
      const ArenaMap::Place p = arena.place(a.value);
      bindings.push_back({artifact::kArena, p.offset, p.contiguous ? stored_bytes(*a.value)
                                                                   : p.root_bytes});
    }
    out.source += fmt::format("\n// ---- task {}: {} | {} | {}\n", i, t.group_name, t.key,
                              ct.config.str());
    out.source += k.source;
    for (const ClLaunch& l : k.launches) {
      artifact::KernelCall call;
      call.symbol = l.symbol;
      call.work_items = l.global[0] * l.global[1] * l.global[2];
      for (const int a : l.args) call.args.push_back(bindings.at(static_cast<size_t>(a)));
      call.params = {l.global[0], l.global[1], l.global[2], l.local[0], l.local[1], l.local[2]};
      call.task = {{"group", t.group_name}, {"template", t.template_name}, {"key", t.key},
                   {"config", ct.config.str()}, {"tuned", ct.tuned}, {"flops", t.flops}};
      prog.calls.push_back(std::move(call));
    }
    out.tasks.push_back(std::move(ct));
  }
  if (out.weights.empty()) out.weights.assign(kArenaAlignment, '\0');
  return out;
}

}  // namespace yoloc::codegen::opencl
