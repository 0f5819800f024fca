#include "codegen/cuda/generic_template.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <variant>

#include "codegen/cpu/emit_util.h"
#include "codegen/cpu/resize_template.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/generic_emitter.h"
#include "codegen/cuda/kernels/embedded.h"
#include "ir/op_registry.h"

namespace yoloc::codegen::cuda {
namespace {

// The scalar helpers the CPU's elementwise expressions call (cpu::elementwise_expr), on the
// device; their std:: math functions are renamed yc_m:: (NVRTC has no <cmath>).
const char* const kGenericPrelude = cuh::generic_prelude;

// The generic kernels' prelude: kGenericPrelude, then the int64 helpers the CPU kernels share.
std::string generic_prelude() {
  return std::string(kGenericPrelude) + cpu::kInt64Helpers +
         "#endif  // YOLOC_CUDA_GENERIC_PRELUDE\n";
}

}  // namespace

namespace generic_detail {

std::optional<GenericKernels> Emitter::run(int64_t threads, int64_t items,
                                           const std::string& prefix) {
  if (!analyse()) return std::nullopt;
  GenericKernels out;
  out.source = cuda_prelude() + generic_prelude();
  out.source += fmt::format("// cuda_generic ({} nodes) threads={} items={}\n", t_.nodes.size(),
                            threads, items);
  const int levels = max_level_ + 1;
  for (int level = 0; level < levels; ++level) {
    std::vector<const Root*> roots;
    int64_t work = 0;
    for (const Root& r : roots_) {
      if (r.level == level) roots.push_back(&r), work += r.work;
    }
    if (work == 0) continue;
    const std::string sym = fmt::format("{}_{}", prefix, out.launches.size());
    const int64_t blocks = cpu::ceil_div(work, threads * items);
    if (blocks > std::numeric_limits<int32_t>::max()) {
      fail("grid too large");
      return std::nullopt;
    }
    std::string body;
    int64_t start = 0;
    for (const Root* r : roots) {
      code_.clear();
      indent_ = 3;
      if (!emit_root(*r, start)) return std::nullopt;
      body += fmt::format("    {}if (e < {}) {{\n{}    }}", start == 0 ? "" : "else ",
                          start + r->work, code_);
      start += r->work;
    }
    out.source += kernel_source(sym, threads, items, blocks, work, body + "\n");
    CudaKernel k;
    k.symbol = sym;
    k.grid = {static_cast<unsigned>(blocks), 1, 1};
    k.block = {static_cast<unsigned>(threads), 1, 1};
    out.launches.push_back(k);
  }
  out.scratch_bytes = static_cast<uint64_t>(scratch_floats_) * 4;
  if (!why_.empty()) return std::nullopt;
  return out;
}

}  // namespace generic_detail

using namespace generic_detail;

std::vector<int64_t> dense_operand_strides(const Value* v) {
  const Shape s = v->type.static_shape();
  if (s.size() == 4 && v->layout.layout == Layout::kNHWC) {
    return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  }
  return dense_strides(s);
}

std::string GenericTask::key() const {
  std::string s = "cuda_generic";
  for (const Node* n : nodes) {
    s += " " + n->op;
    std::string attrs;
    for (const auto& [name, v] : n->attrs.all()) {
      attrs += (attrs.empty() ? "" : ";") + name + "=" + attr_text(v);
    }
    if (!attrs.empty()) s += "{" + attrs + "}";
    s += "(";
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* v = n->input(i);
      s += i ? "," : "";
      if (!v) continue;
      const bool array = std::find(constants.begin(), constants.end(), v) != constants.end();
      if (v->known() && !array && v->known()->numel() <= 16) {
        s += fmt::format("={}", fmt::join(v->known()->to_doubles(), "/"));
      } else {
        s += shape_str(v);
      }
    }
    s += ")->";
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      s += fmt::format("{}{}:{}", i ? "," : "", dtype_name(n->outputs[i]->type.dtype),
                       shape_str(n->outputs[i]));
    }
  }
  s += " | in";
  for (const CudaOperand& o : inputs) s += fmt::format(" {}", operand_str(o));
  s += " | out";
  for (const CudaOperand& o : outputs) s += fmt::format(" {}", operand_str(o));
  return s;
}

std::optional<GenericTask> generic_task_from_group(
    const Graph& g, const FusedGroup& grp,
    const std::function<CudaOperand(const Value*)>& operand_of, std::string* why) {
  const auto refuse = [&](const std::string& what) -> std::optional<GenericTask> {
    if (why) *why = what;
    return std::nullopt;
  };
  const cpu::GroupIO io = cpu::group_io(g, grp);
  if (io.nodes.empty() || io.outputs.empty()) return refuse("empty group");
  GenericTask t;
  t.nodes = io.nodes;
  std::set<const Value*> data;
  for (const Node* n : io.nodes) {
    for (size_t i : data_slots(*n)) data.insert(n->input(i));
  }
  for (const Value* v : io.inputs) {
    if (!v->is_constant()) {
      t.inputs.push_back(operand_of(v));
      if (t.inputs.back().value != v) return refuse("operand_of gave another value");
    } else if (data.count(v) && !baked_scalar(v)) {
      if (!is_float(v->data.dtype())) return refuse("integer constant " + v->name + " as data");
      t.constants.push_back(v);
    }
  }
  for (const Value* v : io.outputs) {
    t.outputs.push_back(operand_of(v));
    if (t.outputs.back().value != v) return refuse("operand_of gave another value");
  }
  Emitter e(t);
  if (!e.run(256, 1, "check")) return refuse(e.why());
  return t;
}

bool GenericTemplate::matches(const GenericTask& t) {
  return !t.nodes.empty() && !t.outputs.empty() && Emitter(t).run(256, 1, "check").has_value();
}

ScheduleSpace GenericTemplate::space(const GenericTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"threads", "threads per block", {64, 128, 256, 512}});
  s.knobs.push_back({"items", "elements per thread, a grid stride apart", {1, 2, 4}});
  return s;
}

bool GenericTemplate::valid(const GenericTask& t, const ScheduleConfig& cfg) {
  return cfg.in_space(space(t)) && matches(t);
}

ScheduleConfig GenericTemplate::default_config(const GenericTask& t) {
  YOLOC_CHECK(matches(t), "generic template does not match {}", t.key());
  // Grids of more than 64k blocks of 256 threads gain nothing from more blocks.
  int64_t work = 0;
  for (const CudaOperand& o : t.outputs) {
    work = std::max(work, shape_numel(o.value->type.static_shape()));
  }
  return ScheduleConfig({{"threads", 256}, {"items", work > (int64_t{256} << 16) ? 2 : 1}});
}

GenericKernels GenericTemplate::emit(const GenericTask& t, const ScheduleConfig& cfg,
                                     const std::string& symbol_prefix) {
  YOLOC_CHECK(cfg.in_space(space(t)), "generic config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(cpu::is_c_identifier(symbol_prefix), "kernel prefix '{}' is not a C identifier",
              symbol_prefix);
  Emitter e(t);
  auto k = e.run(cfg.get("threads"), cfg.get("items"), symbol_prefix);
  YOLOC_CHECK(k.has_value(), "generic template does not match {}: {}", t.key(), e.why());
  return *std::move(k);
}

}  // namespace yoloc::codegen::cuda
