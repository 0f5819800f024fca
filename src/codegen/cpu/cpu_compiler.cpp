#include "codegen/cpu/cpu_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/cpu/emit_util.h"
#include "yoloc/kernel_abi.h"

namespace yoloc::codegen::cpu {
namespace {

uint64_t align64(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

/// Where activations live: the memory plan's arena, then each graph input (64-byte aligned).
class ArenaMap {
 public:
  ArenaMap(const Graph& g, const MemoryPlan& plan) : g_(g), plan_(plan) {
    uint64_t end = align64(plan.arena_bytes);
    for (const Value* in : g.inputs) {
      input_offsets_.push_back(end);
      end = align64(end + stored_bytes(*in));
    }
    bytes_ = std::max<uint64_t>(end, kArenaAlignment);
  }

  uint64_t bytes() const { return bytes_; }
  const std::vector<uint64_t>& input_offsets() const { return input_offsets_; }

  /// Byte offset of v's first element, the bytes of the buffer it lies in (its root: an
  /// allocation or a graph input), and whether its elements are dense.
  struct Place {
    uint64_t offset = 0;
    uint64_t root_bytes = 0;
    bool contiguous = true;
  };
  Place place(const Value* v) const {
    const auto in = std::find(g_.inputs.begin(), g_.inputs.end(), v);
    if (in != g_.inputs.end()) {
      const auto i = static_cast<size_t>(in - g_.inputs.begin());
      return {input_offsets_[i], stored_bytes(*v), true};
    }
    const auto it = plan_.values.find(v->name);
    YOLOC_CHECK(it != plan_.values.end(), "value '{}' has no place in the memory plan", v->name);
    const ValueSlot& s = it->second;
    switch (s.placement) {
      case Placement::kArena:
        return {s.offset, plan_.allocations.at(static_cast<size_t>(s.allocation)).bytes,
                s.contiguous};
      case Placement::kInput: {
        YOLOC_CHECK(s.input >= 0, "value '{}' views an unknown input", v->name);
        const auto i = static_cast<size_t>(s.input);
        return {input_offsets_[i] + s.offset, stored_bytes(*g_.inputs[i]), s.contiguous};
      }
      case Placement::kConstant:
      case Placement::kInternal: break;
    }
    YOLOC_CHECK(false, "value '{}' is read by a kernel but is not stored", v->name);
    return {};
  }

 private:
  const Graph& g_;
  const MemoryPlan& plan_;
  std::vector<uint64_t> input_offsets_;
  uint64_t bytes_ = 0;
};

/// Appends constants to the weights blob, each 64-byte aligned.
uint64_t add_weights(std::string& blob, const std::vector<float>& data) {
  blob.resize(align64(blob.size()), '\0');
  const uint64_t offset = blob.size();
  blob.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return offset;
}

/// Tracks which values hold their data while the program runs in order, so the driver can
/// check that every kernel reads only what earlier kernels wrote (or the graph inputs).
class Availability {
 public:
  explicit Availability(const Graph& g) : g_(g) {}
  void written(const Value* v) { written_.insert(v); }
  bool available(const Value* v) const {
    if (v->is_constant() || written_.count(v) ||
        std::find(g_.inputs.begin(), g_.inputs.end(), v) != g_.inputs.end())
      return true;
    const Node* p = v->producer;
    if (!p || !p->is_view()) return false;
    // A view holds data once what it re-addresses does: all inputs of a concat, the input of a
    // split / slice / reshape.
    return std::all_of(p->inputs.begin(), p->inputs.end(),
                       [&](const Value* in) { return !in || available(in); });
  }

 private:
  const Graph& g_;
  std::set<const Value*> written_;
};

}  // namespace

std::string abi_wrapper_source(const LoweredKernel& k, const std::string& abi_symbol,
                               int64_t batch, const std::vector<uint64_t>& batch_strides) {
  std::vector<std::string> exprs;  // one C++ expression per kernel argument
  size_t bound = 0;
  for (const KernelArg& a : k.args) {
    if (a.kind == KernelArg::Kind::kNull) {
      exprs.push_back("nullptr");
      continue;
    }
    YOLOC_CHECK(bound < batch_strides.size(), "wrapper of {}: too few batch strides",
                k.kernel.symbol);
    const std::string type = a.output ? "float*" : "const float*";
    const uint64_t stride = batch_strides[bound];
    exprs.push_back(stride == 0 ? fmt::format("({})a[{}]", type, bound)
                                : fmt::format("({})((char*)a[{}] + i * {})", type, bound, stride));
    ++bound;
  }
  std::string call;
  if (k.abi == KernelAbi::kConv) {
    YOLOC_CHECK(exprs.size() == 5, "conv kernel {} takes 5 arguments", k.kernel.symbol);
    call = fmt::format("{}({}, {}, {}, {}, {}, lo, hi);", k.kernel.symbol, exprs[0], exprs[1],
                       exprs[2], exprs[3], exprs[4]);
  } else {
    std::string ins, outs;
    for (size_t i = 0; i < k.args.size(); ++i) {
      std::string& list = k.args[i].output ? outs : ins;
      list += (list.empty() ? "" : ", ") + exprs[i];
    }
    call = fmt::format(
        "const float* in[] = {{{}}};\n    float* const out[] = {{{}}};\n    {}(in, out, lo, hi);",
        ins.empty() ? "nullptr" : ins, outs, k.kernel.symbol);
  }
  return fmt::format(R"(
extern "C" void {0}(void* const* a, const int64_t* p, int64_t b, int64_t e) {{
  (void)p;
  constexpr int64_t kItems = {1}, kImages = {2};
  for (int64_t i = b / kItems; i < kImages && i * kItems < e; ++i) {{
    const int64_t lo = (b > i * kItems ? b : i * kItems) - i * kItems;
    const int64_t hi = (e < (i + 1) * kItems ? e : (i + 1) * kItems) - i * kItems;
    {3}
  }}
}}
)",
                     abi_symbol, k.kernel.work_items, batch, call);
}

CpuBuild compile_cpu(const Graph& g, const CpuCompileOptions& options) {
  CpuBuild out;
  const std::vector<CpuTask> tasks = extract_cpu_tasks(g, options.isa);
  out.plan = plan_memory(g);
  verify_memory_plan(out.plan);
  const ArenaMap arena(g, out.plan);
  Availability avail(g);

  runtime::Program& prog = out.program;
  prog.kernel_blob = kKernelBlob;
  prog.arena_bytes = arena.bytes();
  prog.input_offsets = arena.input_offsets();
  for (const Value* v : g.outputs) {
    if (v->is_constant())
      user_error("the graph output '{}' is a constant; the CPU target needs computed outputs",
                 v->name);
    const ArenaMap::Place p = arena.place(v);
    YOLOC_CHECK(p.contiguous, "graph output '{}' is not dense in the arena", v->name);
    prog.output_offsets.push_back(p.offset);
  }

  out.source = "// Generated by yoloc: one function per kernel, one ABI wrapper each.\n";
  out.source += "#include <stdint.h>\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const CpuTask& t = tasks[i];
    CompiledTask ct{t.key, t.template_name, t.group_name, t.default_config, false};
    if (auto it = options.configs.find(t.key); it != options.configs.end() && t.valid(it->second)) {
      ct.config = it->second;
      ct.tuned = true;
      ++out.tuned;
    }
    const LoweredKernel k = t.lower(ct.config, fmt::format("yc_t{}", i));
    runtime::KernelCall call;
    call.symbol = fmt::format("yc_k{}", i);
    call.work_items = k.kernel.work_items * t.batch;
    call.task = {{"group", t.group_name},
                 {"template", t.template_name},
                 {"key", t.key},
                 {"config", ct.config.str()},
                 {"tuned", ct.tuned},
                 {"flops", t.flops}};
    std::vector<uint64_t> strides;
    for (const KernelArg& a : k.args) {
      if (a.kind == KernelArg::Kind::kNull) continue;
      if (a.kind == KernelArg::Kind::kConstant) {
        const uint64_t off = add_weights(out.weights, a.data);
        call.args.push_back({kWeightsBlob, off, a.data.size() * sizeof(float)});
        strides.push_back(0);
        continue;
      }
      if (a.output) {
        avail.written(a.value);
      } else {
        YOLOC_CHECK(avail.available(a.value), "kernel {} ({}) reads '{}' before it is written",
                    i, t.group_name, a.value->name);
      }
      const ArenaMap::Place p = arena.place(a.value);
      uint64_t stride = 0, span = stored_bytes(*a.value);
      if (t.batch > 1) {
        // Images of a view lie one root image apart (YOLO views slice channels, not images).
        stride = p.root_bytes / static_cast<uint64_t>(t.batch);
        span = stride * static_cast<uint64_t>(t.batch - 1) + a.bytes;
      } else if (!p.contiguous) {
        user_error(
            "kernel {} ({}) reads '{}', a strided view, as a dense tensor; compile with --batch 1 "
            "or report the model",
            i, t.group_name, a.value->name);
      }
      call.args.push_back({runtime::kArena, p.offset, span});
      strides.push_back(stride);
    }
    out.source += fmt::format("\n// ---- task {}: {} | {} | {}\n", i, t.group_name, t.key,
                              ct.config.str());
    out.source += k.kernel.source;
    out.source += abi_wrapper_source(k, call.symbol, t.batch, strides);
    prog.calls.push_back(std::move(call));
    out.tasks.push_back(std::move(ct));
  }
  if (out.weights.empty()) out.weights.assign(kArenaAlignment, '\0');  // blobs are never empty

  SharedObject so = compile_shared_object(out.source, options.cc);
  out.kernels_so = std::move(so.bytes);
  out.compiler_log = std::move(so.log);
  return out;
}

}  // namespace yoloc::codegen::cpu
