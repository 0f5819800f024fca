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
#include "codegen/cuda/kernels/embedded.h"
#include "ir/op_registry.h"

namespace yoloc::codegen::cuda {
namespace {

using cpu::dense_strides;

// The scalar helpers the CPU's elementwise expressions call (cpu::elementwise_expr), on the
// device; their std:: math functions are renamed yc_m:: (NVRTC has no <cmath>).
const char* const kGenericPrelude = cuh::generic_prelude;

// The generic kernels' prelude: kGenericPrelude, then the int64 helpers the CPU kernels share.
std::string generic_prelude() {
  return std::string(kGenericPrelude) + cpu::kInt64Helpers +
         "#endif  // YOLOC_CUDA_GENERIC_PRELUDE\n";
}

constexpr const char* kLowest = "-3.402823466e+38f";

bool is_alias(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity";
}

bool is_int64(const Value* v) { return v && v->type.dtype == DType::kInt64; }

// The type of a value in the kernels: int64 values stay integers (indices and their arithmetic),
// the others are computed in fp32.
const char* ctype(const Value* v) { return is_int64(v) ? "yc_i64" : "float"; }

// Whether n may read int64 data: index arithmetic and ops that move or select elements
// (elementwise ones only in the forms cpu::elementwise_expr takes).
bool reads_int64(const Node& n) {
  static const std::set<std::string> kOps = {"Transpose", "Slice",     "Split",
                                             "Concat",    "Gather",    "GatherElements",
                                             "Tile",      "ReduceMax", "ReduceMin",
                                             "TopK"};
  return is_alias(n.op) || kOps.count(n.op) || (n.def && n.def->has(kTraitElementwise));
}


int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::optional<Shape> static_shape(const Value* v) {
  if (!v || !v->type.has_rank || !v->type.is_static()) return std::nullopt;
  return v->type.static_shape();
}

// The inputs of n read as tensor data (the others are shapes, bounds, scales read at compile
// time).
std::vector<size_t> data_slots(const Node& n) {
  size_t count = 1;
  if (n.def && n.def->has(kTraitElementwise)) count = n.inputs.size();
  if (n.op == "Concat") count = n.inputs.size();
  if (n.op == "Conv") count = 3;
  if (n.op == "MatMul" || n.op == "Gather" || n.op == "GatherElements") count = 2;
  std::vector<size_t> s;
  for (size_t i = 0; i < std::min(count, n.inputs.size()); ++i) {
    if (n.input(i)) s.push_back(i);
  }
  return s;
}

bool is_loop_op(const std::string& op) {
  return op == "Conv" || op == "MatMul" || op == "MaxPool" || op == "AveragePool" ||
         op == "Softmax" || op == "ReduceMax" || op == "ReduceMin" || op == "TopK";
}

// A constant read as data that is baked into the code as a literal (one element).
bool baked_scalar(const Value* v) { return v->is_constant() && v->data.numel() == 1; }

std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "3.402823466e+38f" : kLowest;
  std::string s = fmt::format("{:.9g}", static_cast<float>(v));
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string int_literal(int64_t v) {
  return v == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807LL - 1)"
                                                  : fmt::format("{}LL", v);
}

// A baked scalar constant as a literal of its kernel type.
std::string scalar_literal(const Value* v) {
  return is_int64(v) ? int_literal(v->data.to_int64s().at(0))
                     : float_literal(v->data.to_doubles().at(0));
}

// A 2-D pooling window over a 4-D input.
struct Window {
  const Value* x = nullptr;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

std::optional<Window> pool_window(const Node& n) {
  const auto xs = static_shape(n.input(0));
  const auto k = n.attrs.get_ints("kernel_shape", {});
  const auto s = n.attrs.get_ints("strides", {1, 1});
  const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto d = n.attrs.get_ints("dilations", {1, 1});
  if (!xs || xs->size() != 4 || k.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2 ||
      n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" || n.outputs.size() != 1) {
    return std::nullopt;
  }
  return Window{n.input(0), k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
}

// A MaxPool whose output has its input's size at stride 1 (pads summing to kernel - 1): a chain
// of them is one MaxPool whose window is the sum of theirs.
bool same_size_max_pool(const Node& n) {
  if (n.op != "MaxPool") return false;
  const auto w = pool_window(n);
  const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  return w && w->sh == 1 && w->sw == 1 && w->dh == 1 && w->dw == 1 &&
         p[0] + p[2] == w->kh - 1 && p[1] + p[3] == w->kw - 1;
}

// Describes an attribute value for the workload key.
std::string attr_text(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return "tensor";
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<float>> ||
                             std::is_same_v<T, std::vector<std::string>>) {
          return fmt::format("[{}]", fmt::join(x, ","));
        } else {
          return fmt::format("{}", x);
        }
      },
      v);
}

std::string shape_str(const Value* v) {
  std::string s;
  for (const Dim& d : v->type.dims) s += fmt::format("{}{}", s.empty() ? "" : "x", d.value);
  return s;
}

std::string operand_str(const CudaOperand& o) {
  return fmt::format("{}:{}", short_dtype_name(o.dtype), fmt::join(o.strides, ","));
}

// What one launch computes: a value, per element or (Softmax) per row.
struct Root {
  const Value* v = nullptr;
  int level = 0;
  int64_t work = 0;  ///< elements, or rows of a Softmax
  /// An input of a view Concat that leaves the group: written into output `dest` from element
  /// `base` on (instead of v's own operands).
  int dest = -1;
  int64_t base = 0;
};

// Generates the kernels of a task; fail() records the first unsupported thing.
class Emitter {
 public:
  explicit Emitter(const GenericTask& t) : t_(t) {}

  std::optional<GenericKernels> run(int64_t threads, int64_t items, const std::string& prefix) {
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

  const std::string& why() const { return why_; }

 private:
  using Idx = std::vector<std::string>;

  bool fail(const std::string& what) {
    if (why_.empty()) why_ = what;
    return false;
  }

  // --- analysis ------------------------------------------------------------------------------

  bool analyse() {
    for (size_t k = 0; k < t_.inputs.size(); ++k) input_[t_.inputs[k].value] = k;
    for (size_t k = 0; k < t_.constants.size(); ++k) constant_[t_.constants[k]] = k;
    for (size_t k = 0; k < t_.outputs.size(); ++k) output_[t_.outputs[k].value] = k;
    int64_t largest = 0;
    const auto check_operand = [&](const CudaOperand& o) {
      const auto s = static_shape(o.value);
      if (!s || s->size() != o.strides.size() || !is_storage_dtype(o.dtype)) return false;
      int64_t end = 1;
      for (size_t d = 0; d < s->size(); ++d) {
        if ((*s)[d] > 0 && o.strides[d] < 0) return false;
        end += ((*s)[d] - 1) * o.strides[d];
      }
      largest = std::max(largest, end);
      return true;
    };
    for (const CudaOperand& o : t_.inputs) {
      if (!check_operand(o)) return fail("input " + o.value->name + ": operand not supported");
    }
    for (const CudaOperand& o : t_.outputs) {
      if (!check_operand(o)) return fail("output " + o.value->name + ": operand not supported");
    }
    for (const Node* n : t_.nodes) {
      for (const Value* o : n->outputs) {
        const auto s = static_shape(o);
        if (!s || !(is_float(o->type.dtype) || is_int64(o))) {
          return fail(n->label() + ": not static float or int64 data");
        }
        producer_[o] = n;
        largest = std::max(largest, shape_numel(*s));
      }
      for (size_t i : data_slots(*n)) {
        const Value* x = n->input(i);
        if (x->is_constant()) {
          if (baked_scalar(x) || constant_.count(x)) continue;
          return fail(n->label() + ": constant " + x->name + " not passed");
        }
        if (!is_float(x->type.dtype) && !(is_int64(x) && reads_int64(*n))) {
          return fail(fmt::format("{}: reads {} data", n->label(), dtype_name(x->type.dtype)));
        }
      }
    }
    // Which values are materialised in scratch: inputs of loop nodes that hold loops
    // themselves, and Softmax results read in the group.
    for (const Node* n : t_.nodes) {
      if (n->op == "TopK") {
        // Each thread counts the elements of its row that rank before its own: the row is read
        // whole by every thread, from memory.
        if (n->outputs.size() != 2) return fail(n->label() + ": outputs");
        forced_.insert(n->outputs.begin(), n->outputs.end());
        if (producer(n->input(0))) forced_.insert(n->input(0));
      }
      if (n->op == "Softmax") {
        for (const Node* u : users(n->outputs[0])) {
          if (u) forced_.insert(n->outputs[0]);
        }
      }
      if (!is_loop_op(n->op)) continue;
      std::vector<const Value*> reads;
      if (n->op == "MaxPool") {
        reads.push_back(pool_base(*n));
      } else {
        for (size_t i : data_slots(*n)) reads.push_back(n->input(i));
      }
      for (const Value* x : reads) {
        if (loopy(x)) forced_.insert(x);
      }
    }
    for (const Node* n : t_.nodes) {
      for (const Value* o : n->outputs) {
        if (forced_.count(o)) {
          // Counted in floats: an int64 element takes two (bases stay 64-float aligned).
          const int64_t floats = shape_numel(o->type.static_shape()) * (is_int64(o) ? 2 : 1);
          int64_scratch_ = int64_scratch_ || is_int64(o);
          scratch_base_[o] = scratch_floats_;
          scratch_floats_ += cpu::ceil_div(floats, 64) * 64;
        }
        if (n->op == "TopK" && o == n->outputs[1]) {
          level_[o] = level_.at(n->outputs[0]);  // made by the root of the values
          continue;
        }
        if (output_.count(o) && n->op == "Concat" && n->is_view()) {
          // The concat's buffer is the output: its inputs made here are written into their
          // slices; those from outside are in place already (their producers wrote them).
          if (forced_.count(o)) return fail(n->label() + ": view Concat read in the group");
          const std::vector<int64_t>& st = t_.outputs[output_.at(o)].strides;
          const auto axis = static_cast<size_t>(norm_axis(n->attrs.get_int("axis", 0), st.size()));
          if (axis >= st.size()) return fail(n->label() + ": axis");
          int64_t first = 0;
          for (const Value* x : n->inputs) {
            if (producer(x)) {
              if (!add_root(x, static_cast<int>(output_.at(o)), first * st[axis])) return false;
            } else if (!input_.count(x)) {
              return fail(n->label() + ": view Concat of a constant");
            }
            first += x->type.static_shape().at(axis);
          }
          continue;
        }
        if ((forced_.count(o) || output_.count(o)) && !add_root(o, -1, 0)) return false;
      }
    }
    int64_t work = 0;
    for (const Root& r : roots_) work += r.work;
    largest = std::max({largest, scratch_floats_, 2 * work});
    wide_ = largest >= (int64_t{1} << 30);
    return why_.empty();
  }

  bool add_root(const Value* v, int dest, int64_t base) {
    Root r;
    r.v = v;
    r.dest = dest;
    r.base = base;
    r.work = shape_numel(v->type.static_shape());
    const Node& n = *producer(v);
    if (n.op == "Softmax") {
      const auto cols = softmax_cols(n);
      if (!cols) return fail(n.label() + ": softmax axis");
      r.work /= std::max<int64_t>(1, cols->second);
    }
    if (n.op == "TopK") {
      const auto k = topk_k(n);
      if (!k) return fail(n.label() + ": K, axis or indices type");
      r.work = *k == 0 ? 0 : shape_numel(n.input(0)->type.static_shape());
    }
    for (const Value* d : reads_of(v)) r.level = std::max(r.level, level_.at(d) + 1);
    if (dest < 0) level_[v] = r.level;
    max_level_ = std::max(max_level_, r.level);
    roots_.push_back(r);
    return true;
  }

  std::vector<const Node*> users(const Value* v) const {
    std::vector<const Node*> u;
    for (const Node* n : t_.nodes) {
      for (size_t i : data_slots(*n)) {
        if (n->input(i) == v) {
          u.push_back(n);
          break;
        }
      }
    }
    return u;
  }

  const Node* producer(const Value* v) const {
    const auto it = producer_.find(v);
    return it == producer_.end() ? nullptr : it->second;
  }

  // The MaxPool chain of n composed while its links are same-size pools made in the group and
  // not materialised: the input of the first pool of the chain.
  const Value* pool_base(const Node& n) const {
    const Value* x = n.input(0);
    if (!same_size_max_pool(n)) return x;
    while (const Node* p = producer(x)) {
      if (!same_size_max_pool(*p) || forced_.count(x)) break;
      x = p->input(0);
    }
    return x;
  }

  // Whether computing v inline runs a loop (a loop node not materialised on the way).
  bool loopy(const Value* v) const {
    const Node* n = producer(v);
    if (!n || forced_.count(v)) return false;
    if (is_loop_op(n->op)) return true;
    for (size_t i : data_slots(*n)) {
      if (loopy(n->input(i))) return true;
    }
    return false;
  }

  // The materialised values that computing root v reads.
  std::set<const Value*> reads_of(const Value* v) const {
    std::set<const Value*> out;
    std::vector<const Value*> stack;
    const Node* n = producer(v);
    const auto push_inputs = [&](const Node& m) {
      if (m.op == "MaxPool") {
        stack.push_back(pool_base(m));
      } else {
        for (size_t i : data_slots(m)) stack.push_back(m.input(i));
      }
    };
    push_inputs(*n);
    std::set<const Value*> seen;
    while (!stack.empty()) {
      const Value* x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      if (forced_.count(x)) {
        out.insert(x);
      } else if (const Node* p = producer(x)) {
        push_inputs(*p);
      }
    }
    return out;
  }

  // The dims a Softmax normalises over: [axis, second) with their element count.
  std::optional<std::pair<size_t, int64_t>> softmax_cols(const Node& n) const {
    const Shape s = n.outputs[0]->type.static_shape();
    const int64_t axis = norm_axis(n.attrs.get_int("axis", -1), s.size());
    if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return std::nullopt;
    const bool flat = n.attrs.get_int("coerce_2d", 0) != 0;
    int64_t count = 1;
    const size_t end = flat ? s.size() : static_cast<size_t>(axis) + 1;
    for (size_t d = static_cast<size_t>(axis); d < end; ++d) count *= s[d];
    return std::make_pair(end, count);
  }

  // A TopK's K (constant, at most the size of its axis) with int64 indices; nullopt otherwise.
  std::optional<int64_t> topk_k(const Node& n) const {
    const Shape xs = n.input(0)->type.static_shape();
    const int64_t axis = norm_axis(n.attrs.get_int("axis", -1), xs.size());
    const Value* kv = n.input(1);
    if (axis < 0 || axis >= static_cast<int64_t>(xs.size()) || !kv || !kv->known() ||
        kv->known()->numel() != 1 || !is_int64(n.outputs[1])) {
      return std::nullopt;
    }
    const int64_t k = kv->known()->to_int64s()[0];
    if (k < 0 || k > xs[static_cast<size_t>(axis)]) return std::nullopt;
    return k;
  }

  // --- code ----------------------------------------------------------------------------------

  const char* ix() const { return wide_ ? "yc_i64" : "int"; }

  void line(const std::string& s) { code_ += std::string(indent_ * 2, ' ') + s + "\n"; }
  std::string fresh(const char* stem) { return fmt::format("{}{}", stem, next_++); }

  void open(const std::string& head) {
    line(head + " {");
    ++indent_;
    memo_.emplace_back();
  }
  void close() {
    memo_.pop_back();
    --indent_;
    line("}");
  }

  static std::string offset(const Idx& idx, const std::vector<int64_t>& strides) {
    std::string s;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (idx[d] == "0" || strides[d] == 0) continue;
      s += (s.empty() ? "" : " + ") +
           (strides[d] == 1 ? idx[d] : fmt::format("{} * {}", idx[d], strides[d]));
    }
    return s.empty() ? "0" : s;
  }

  // Decomposes the work index `r` over the dims of `shape` listed in `order` (outermost first)
  // into index variables; the others are 0.
  Idx decompose(const std::string& r, const Shape& shape, const std::vector<size_t>& order) {
    Idx idx(shape.size(), "0");
    const std::string rest = fresh("r");
    line(fmt::format("{} {} = {};", ix(), rest, r));
    for (size_t k = order.size(); k-- > 0;) {
      const size_t d = order[k];
      if (shape[d] == 1) continue;
      idx[d] = fresh("i");
      if (k == 0) {
        line(fmt::format("const {} {} = {};", ix(), idx[d], rest));
      } else {
        line(fmt::format("const {} {} = {} % {};", ix(), idx[d], rest, shape[d]));
        line(fmt::format("{} /= {};", rest, shape[d]));
      }
    }
    return idx;
  }

  // Where the current root writes v, when it writes it to an operand: the output, its strides
  // and the first element (output -1 when v goes to scratch only).
  std::tuple<int, const std::vector<int64_t>*, int64_t> destination(const Value* v) const {
    if (root_->dest >= 0 && v == root_->v) {
      return {root_->dest, &t_.outputs[static_cast<size_t>(root_->dest)].strides, root_->base};
    }
    const auto it = output_.find(v);
    if (root_->dest < 0 && it != output_.end()) {
      return {static_cast<int>(it->second), &t_.outputs[it->second].strides, 0};
    }
    return {-1, nullptr, 0};
  }

  // The dims of a root's value from outermost to innermost in what it writes: by decreasing
  // stride of its output operand (ties in logical order), logical order for scratch only.
  std::vector<size_t> walk_order(const Value* v) const {
    const Shape s = v->type.static_shape();
    std::vector<size_t> order(s.size());
    for (size_t d = 0; d < s.size(); ++d) order[d] = d;
    const auto [k, st, base] = destination(v);
    if (st) {
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return (*st)[a] > (*st)[b]; });
    }
    return order;
  }

  void store(const Value* v, const Idx& idx, const std::string& val) {
    const auto [k, st, base] = destination(v);
    if (st) {
      line(fmt::format("yc_store(out{} + ({}{}), {});", k, base ? fmt::format("{} + ", base) : "",
                       offset(idx, *st), val));
    }
    if (root_->dest < 0 && forced_.count(v)) {
      line(fmt::format("{} = {};", scratch_at(v, idx), val));
    }
  }

  // v's element idx in scratch (dense, logical order).
  std::string scratch_at(const Value* v, const Idx& idx) const {
    const std::string off = offset(idx, dense_strides(v->type.static_shape()));
    if (is_int64(v)) return fmt::format("scratch_l[{} + {}]", scratch_base_.at(v) / 2, off);
    return fmt::format("scratch_f[{} + {}]", scratch_base_.at(v), off);
  }

  bool emit_root(const Root& r, int64_t start) {
    memo_.assign(1, {});
    root_ = &r;
    const Node& n = *producer(r.v);
    const std::string e = start == 0 ? "e" : fmt::format("e - {}", start);
    if (n.op == "Softmax") return emit_softmax(n, e);
    if (n.op == "TopK") return emit_topk(n, e);
    const Idx idx = decompose(e, r.v->type.static_shape(), walk_order(r.v));
    const std::string val = at(r.v, idx);
    if (!why_.empty()) return false;
    store(r.v, idx, val);
    return true;
  }

  // One row of a Softmax: max, sum of exponentials, then the normalised values.
  bool emit_softmax(const Node& n, const std::string& e) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape s = y->type.static_shape();
    const auto cols = softmax_cols(n);
    const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", -1), s.size()));
    Shape rows = s;
    for (size_t d = axis; d < cols->first; ++d) rows[d] = 1;
    std::vector<size_t> order;
    for (size_t d : walk_order(y)) {
      if (d < axis || d >= cols->first) order.push_back(d);
    }
    const Idx row = decompose(e, rows, order);
    const std::string m = fresh("m"), sum = fresh("s"), inv = fresh("q");
    const auto loop = [&](const std::function<void(const Idx&, const std::string&)>& body) {
      const std::string a = fresh("l");
      open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), a, cols->second));
      Shape col_shape(s.size(), 1);
      std::vector<size_t> col_order;
      for (size_t d = axis; d < cols->first; ++d) col_shape[d] = s[d], col_order.push_back(d);
      Idx idx = row;
      const Idx c = decompose(a, col_shape, col_order);
      for (size_t d = axis; d < cols->first; ++d) idx[d] = c[d];
      body(idx, at(x, idx));
      close();
    };
    line(fmt::format("float {} = {};", m, kLowest));
    loop([&](const Idx&, const std::string& v) {
      line(fmt::format("{0} = fmaxf({0}, {1});", m, v));
    });
    line(fmt::format("float {} = 0.f;", sum));
    loop([&](const Idx&, const std::string& v) {
      line(fmt::format("{} += yc_exp({} - {});", sum, v, m));
    });
    line(fmt::format("const float {} = 1.f / {};", inv, sum));
    loop([&](const Idx& idx, const std::string& v) {
      const std::string o = fresh("t");
      line(fmt::format("const float {} = yc_exp({} - {}) * {};", o, v, m, inv));
      store(y, idx, o);
    });
    return why_.empty();
  }

  // One element of a TopK's row: its rank is the count of the row's elements ordered before it
  // (the reference executor's order: NaN first when largest, last otherwise, then the values,
  // ties to the lower index: a strict total order, so the ranks are distinct); the element goes
  // to its rank's place when that is under K. The count stops at K: most elements are out soon.
  bool emit_topk(const Node& n, const std::string& e) {
    const Value *x = n.input(0), *vals = n.outputs[0], *inds = n.outputs[1];
    const Shape xs = x->type.static_shape();
    const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", -1), xs.size()));
    const int64_t k = *topk_k(n);
    const bool largest = n.attrs.get_int("largest", 1) != 0;
    std::vector<size_t> order(xs.size());
    for (size_t d = 0; d < xs.size(); ++d) order[d] = d;
    Idx idx = decompose(e, xs, order);
    const std::string me = idx[axis], v = at(x, idx), vn = fresh("n"), rank = fresh("k");
    line(fmt::format("const bool {} = {} != {};", vn, v, v));
    line(fmt::format("{} {} = 0;", ix(), rank));
    const std::string j = fresh("l");
    open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), j, xs[axis]));
    Idx other = idx;
    other[axis] = j;
    const std::string u = at(x, other), un = fresh("n");
    line(fmt::format("const bool {} = {} != {};", un, u, u));
    // Whether element j comes before this one.
    line(fmt::format("{} += {} != {} ? {} : (!{} && {} != {}) ? ({} {} {}) : ({} < {});", rank, un,
                     vn, largest ? un : vn, un, u, v, u, largest ? ">" : "<", v, j, me));
    line(fmt::format("if ({} >= {}) break;", rank, k));
    close();
    open(fmt::format("if ({} < {})", rank, k));
    Idx out = idx;
    out[axis] = rank;
    store(vals, out, v);
    store(inds, out, fmt::format("static_cast<yc_i64>({})", me));
    close();
    return why_.empty();
  }

  // The name of a variable holding v at idx; emits the statements that compute it.
  std::string at(const Value* v, const Idx& idx) {
    if (!why_.empty()) return "0.f";
    std::string key = std::to_string(v->id);
    for (const std::string& i : idx) key += "|" + i;
    for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
      const auto f = it->find(key);
      if (f != it->end()) return f->second;
    }
    const std::string r = compute(v, idx);
    memo_.back()[key] = r;
    return r;
  }

  // A new variable of v's kernel type set to expr.
  std::string let(const std::string& expr, const Value* v = nullptr) {
    const std::string t = fresh("t");
    line(fmt::format("const {} {} = {};", ctype(v), t, expr));
    return t;
  }

  std::string compute(const Value* v, const Idx& idx) {
    if (baked_scalar(v)) return scalar_literal(v);
    if (const auto it = constant_.find(v); it != constant_.end()) {
      return let(fmt::format("c{}[{}]", it->second,
                             offset(idx, dense_strides(v->type.static_shape()))));
    }
    if (const auto it = input_.find(v); it != input_.end()) {
      return let(fmt::format("yc_load(in{} + ({}))", it->second,
                             offset(idx, t_.inputs[it->second].strides)));
    }
    if (forced_.count(v) && v != root_->v) return let(scratch_at(v, idx), v);
    const Node* n = producer(v);
    if (!n) return fail("value " + v->name + " is not available"), "0.f";
    const std::string& op = n->op;
    if (is_alias(op)) return at(n->input(0), reshape_index(*n, idx));
    if (n->def && n->def->has(kTraitElementwise)) return elementwise(*n, idx);
    if (op == "Transpose") return transpose(*n, idx);
    if (op == "Slice") return slice(*n, idx);
    if (op == "Split") return split(*n, v, idx);
    if (op == "Concat") return concat(*n, idx);
    if (op == "Resize") return resize(*n, idx);
    if (op == "Conv") return conv(*n, idx);
    if (op == "MatMul") return matmul(*n, idx);
    if (op == "MaxPool" || op == "AveragePool") return pool(*n, idx);
    if (op == "Gather") return gather(*n, idx);
    if (op == "GatherElements") return gather_elements(*n, idx);
    if (op == "Tile") return tile(*n, idx);
    if (op == "ReduceMax" || op == "ReduceMin") return reduce_extremum(*n, idx);
    return fail(n->label() + ": op not supported"), "0.f";
  }

  std::string elementwise(const Node& n, const Idx& idx) {
    const Shape ys = n.outputs[0]->type.static_shape();
    std::vector<std::string> args;
    for (const Value* in : n.inputs) {
      if (!in) {
        args.emplace_back();
        continue;
      }
      const Shape xs = in->type.static_shape();
      if (xs.size() > ys.size()) return fail(n.label() + ": broadcast"), "0.f";
      Idx xi(xs.size(), "0");
      const size_t lead = ys.size() - xs.size();
      for (size_t d = 0; d < xs.size(); ++d) {
        if (xs[d] == ys[lead + d]) {
          xi[d] = xs[d] == 1 ? "0" : idx[lead + d];
        } else if (xs[d] != 1) {
          return fail(n.label() + ": broadcast"), "0.f";
        }
      }
      args.push_back(at(in, xi));
    }
    auto e = cpu::elementwise_expr(n, args);
    if (!e) return fail(n.label() + ": elementwise op not supported"), "0.f";
    cpu::replace_all(*e, "std::", "yc_m::");
    return let(*e, n.outputs[0]);
  }

  // Reshape-like: dims grouped into runs of equal element count, each run re-indexed through
  // its local flat index.
  Idx reshape_index(const Node& n, const Idx& idx) {
    const Shape xs = n.input(0)->type.static_shape(), ys = n.outputs[0]->type.static_shape();
    Idx xi(xs.size(), "0");
    std::vector<size_t> xd, yd;
    for (size_t d = 0; d < xs.size(); ++d)
      if (xs[d] != 1) xd.push_back(d);
    for (size_t d = 0; d < ys.size(); ++d)
      if (ys[d] != 1) yd.push_back(d);
    size_t i = 0, j = 0;
    while (i < xd.size() && j < yd.size()) {
      std::vector<size_t> gx{xd[i]}, gy{yd[j]};
      int64_t px = xs[xd[i]], py = ys[yd[j]];
      while (px != py) {
        if (px < py) {
          if (++i >= xd.size()) return fail(n.label() + ": reshape"), xi;
          gx.push_back(xd[i]), px *= xs[xd[i]];
        } else {
          if (++j >= yd.size()) return fail(n.label() + ": reshape"), xi;
          gy.push_back(yd[j]), py *= ys[yd[j]];
        }
      }
      ++i, ++j;
      if (gx.size() == 1 && gy.size() == 1) {
        xi[gx[0]] = idx[gy[0]];
        continue;
      }
      std::string flat;
      int64_t st = 1;
      for (size_t k = gy.size(); k-- > 0;) {
        const std::string term = st == 1 ? idx[gy[k]] : fmt::format("{} * {}", idx[gy[k]], st);
        flat = flat.empty() ? term : term + " + " + flat;
        st *= ys[gy[k]];
      }
      const std::string f = fresh("f");
      line(fmt::format("const {} {} = {};", ix(), f, flat));
      st = 1;
      for (size_t k = gx.size(); k-- > 0;) {
        const int64_t dim = xs[gx[k]];
        std::string e = st == 1 ? f : fmt::format("{} / {}", f, st);
        if (k > 0) e = fmt::format("({}) % {}", e, dim);
        xi[gx[k]] = "(" + e + ")";
        st *= dim;
      }
    }
    if (i != xd.size() || j != yd.size()) fail(n.label() + ": reshape");
    return xi;
  }

  std::string transpose(const Node& n, const Idx& idx) {
    const size_t r = idx.size();
    std::vector<int64_t> perm = n.attrs.get_ints("perm", {});
    if (perm.empty()) {
      for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    if (perm.size() != r) return fail(n.label() + ": perm"), "0.f";
    Idx xi(r, "0");
    for (size_t j = 0; j < r; ++j) {
      const auto p = static_cast<size_t>(norm_axis(perm[j], r));
      if (p >= r) return fail(n.label() + ": perm"), "0.f";
      xi[p] = idx[j];
    }
    return at(n.input(0), xi);
  }

  std::optional<std::vector<int64_t>> ints(const Node& n, size_t i) {
    const Value* v = n.input(i);
    if (!v) return std::vector<int64_t>{};
    if (!v->known()) return std::nullopt;
    return v->known()->to_int64s();
  }

  std::string slice(const Node& n, const Idx& idx) {
    const Shape xs = n.input(0)->type.static_shape();
    const auto starts = ints(n, 1), axes = ints(n, 3), steps = ints(n, 4);
    if (!starts || !axes || !steps) return fail(n.label() + ": slice bounds not known"), "0.f";
    Idx xi = idx;
    for (size_t i = 0; i < starts->size(); ++i) {
      const int64_t d = axes->empty() ? static_cast<int64_t>(i) : norm_axis((*axes)[i], xs.size());
      if (d < 0 || d >= static_cast<int64_t>(xs.size())) return fail(n.label() + ": axes"), "0.f";
      const int64_t dim = xs[static_cast<size_t>(d)];
      const int64_t step = steps->empty() ? 1 : (*steps)[i];
      int64_t s0 = (*starts)[i] < 0 ? (*starts)[i] + dim : (*starts)[i];
      s0 = step > 0 ? std::clamp<int64_t>(s0, 0, dim) : std::clamp<int64_t>(s0, 0, dim - 1);
      std::string& e = xi[static_cast<size_t>(d)];
      const std::string scaled = step == 1 ? e : fmt::format("{} * {}", e, step);
      e = s0 == 0 ? scaled : fmt::format("({} + {})", s0, scaled);
    }
    return at(n.input(0), xi);
  }

  std::string split(const Node& n, const Value* v, const Idx& idx) {
    const Shape xs = n.input(0)->type.static_shape();
    const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", 0), xs.size()));
    if (axis >= xs.size()) return fail(n.label() + ": axis"), "0.f";
    int64_t offset = 0;
    for (const Value* o : n.outputs) {
      if (o == v) break;
      offset += o->type.static_shape().at(axis);
    }
    Idx xi = idx;
    if (offset != 0) xi[axis] = fmt::format("({} + {})", idx[axis], offset);
    return at(n.input(0), xi);
  }

  std::string concat(const Node& n, const Idx& idx) {
    const Shape ys = n.outputs[0]->type.static_shape();
    const auto axis = static_cast<size_t>(norm_axis(n.attrs.get_int("axis", 0), ys.size()));
    if (axis >= ys.size()) return fail(n.label() + ": axis"), "0.f";
    std::vector<std::pair<const Value*, int64_t>> parts;  // non-empty inputs, first index
    int64_t offset = 0;
    for (const Value* x : n.inputs) {
      const int64_t d = x->type.static_shape().at(axis);
      if (d > 0) parts.emplace_back(x, offset);
      offset += d;
    }
    if (parts.size() == 1) {
      Idx xi = idx;
      if (parts[0].second) xi[axis] = fmt::format("({} - {})", idx[axis], parts[0].second);
      return at(parts[0].first, xi);
    }
    const std::string t = fresh("t");
    line(fmt::format("{} {};", ctype(n.outputs[0]), t));
    for (size_t k = 0; k < parts.size(); ++k) {
      const auto [x, first] = parts[k];
      const int64_t end = first + x->type.static_shape().at(axis);
      open(k == 0                    ? fmt::format("if ({} < {})", idx[axis], end)
           : k + 1 == parts.size() ? "else"
                                   : fmt::format("else if ({} < {})", idx[axis], end));
      Idx xi = idx;
      if (first) xi[axis] = fmt::format("({} - {})", idx[axis], first);
      line(fmt::format("{} = {};", t, at(x, xi)));
      close();
    }
    return t;
  }

  // An index variable: the int64 value ival clamped into a dim of `dim` (yc_index).
  std::string index_var(const std::string& ival, int64_t dim) {
    const std::string p = fresh("p");
    line(fmt::format("const {0} {1} = static_cast<{0}>(yc_index({2}, {3}));", ix(), p, ival, dim));
    return p;
  }

  // Gather: the data's dims before the axis, then the indices' dims, then the data's after it.
  std::string gather(const Node& n, const Idx& idx) {
    const Value *x = n.input(0), *ind = n.input(1);
    const Shape xs = x->type.static_shape(), is = ind->type.static_shape();
    const int64_t axis = norm_axis(n.attrs.get_int("axis", 0), xs.size());
    if (!is_int64(ind) || axis < 0 || axis >= static_cast<int64_t>(xs.size())) {
      return fail(n.label() + ": axis or indices type"), "0.f";
    }
    const auto a = static_cast<size_t>(axis);
    const Idx ii(idx.begin() + axis, idx.begin() + axis + static_cast<int64_t>(is.size()));
    Idx xi(idx.begin(), idx.begin() + axis);
    xi.push_back(index_var(at(ind, ii), xs[a]));
    xi.insert(xi.end(), idx.begin() + axis + static_cast<int64_t>(is.size()), idx.end());
    return at(x, xi);
  }

  // GatherElements: the element at the output's own position but along the axis, where its
  // index says.
  std::string gather_elements(const Node& n, const Idx& idx) {
    const Value *x = n.input(0), *ind = n.input(1);
    const Shape xs = x->type.static_shape();
    const int64_t axis = norm_axis(n.attrs.get_int("axis", 0), xs.size());
    if (!is_int64(ind) || axis < 0 || axis >= static_cast<int64_t>(xs.size()) ||
        ind->type.static_shape().size() != xs.size()) {
      return fail(n.label() + ": axis or indices"), "0.f";
    }
    Idx xi = idx;
    xi[static_cast<size_t>(axis)] = index_var(at(ind, idx), xs[static_cast<size_t>(axis)]);
    return at(x, xi);
  }

  std::string tile(const Node& n, const Idx& idx) {
    const Shape xs = n.input(0)->type.static_shape();
    if (xs.size() != idx.size()) return fail(n.label() + ": rank"), "0.f";
    Idx xi(xs.size(), "0");
    for (size_t d = 0; d < xs.size(); ++d) {
      if (xs[d] != 1) xi[d] = fmt::format("({} % {})", idx[d], xs[d]);
    }
    return at(n.input(0), xi);
  }

  // ReduceMax / ReduceMin over constant axes: a loop over the reduced dims from -inf / +inf (the
  // int64 extremes), a NaN propagating as in the reference executor.
  std::string reduce_extremum(const Node& n, const Idx& idx) {
    const Value *x = n.input(0), *y = n.outputs[0];
    const Shape xs = x->type.static_shape();
    std::vector<int64_t> axes;
    if (n.inputs.size() > 1 && n.input(1)) {
      const auto a = ints(n, 1);
      if (!a) return fail(n.label() + ": axes not known"), "0.f";
      axes = *a;
    }
    std::vector<bool> reduced(xs.size(),
                              axes.empty() && !n.attrs.get_int("noop_with_empty_axes", 0));
    for (int64_t a : axes) {
      const int64_t d = norm_axis(a, xs.size());
      if (d < 0 || d >= static_cast<int64_t>(xs.size())) return fail(n.label() + ": axes"), "0.f";
      reduced[static_cast<size_t>(d)] = true;
    }
    const bool keep = n.attrs.get_int("keepdims", 1) != 0;
    const bool max = n.op == "ReduceMax";
    const std::string acc = fresh("t");
    const std::string init = is_int64(y) ? (max ? int_literal(std::numeric_limits<int64_t>::min())
                                                : int_literal(std::numeric_limits<int64_t>::max()))
                                         : (max ? "-yc_inf()" : "yc_inf()");
    line(fmt::format("{} {} = {};", ctype(y), acc, init));
    Idx xi(xs.size(), "0");
    size_t out = 0;
    int opened = 0;
    for (size_t d = 0; d < xs.size(); ++d) {
      if (!reduced[d]) {
        xi[d] = idx.at(out++);
        continue;
      }
      if (keep) ++out;
      if (xs[d] == 1) continue;
      xi[d] = fresh("l");
      open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), xi[d], xs[d]));
      ++opened;
    }
    const std::string u = at(x, xi);
    line(fmt::format("{0} = {1} {2} {0} || {1} != {1} ? {1} : {0};", acc, u, max ? ">" : "<"));
    for (int k = 0; k < opened; ++k) close();
    return acc;
  }

  std::string resize(const Node& n, const Idx& idx) {
    const Value* x = n.input(0);
    const Shape xs = x->type.static_shape(), ys = n.outputs[0]->type.static_shape();
    if (n.attrs.get_string("mode", "nearest") != "nearest" || xs.size() != ys.size()) {
      return fail(n.label() + ": only nearest Resize"), "0.f";
    }
    std::vector<double> scales;
    const Value* sv = n.input(2);
    if (sv && sv->known() && sv->known()->numel() == static_cast<int64_t>(xs.size())) {
      scales = sv->known()->to_doubles();
    }
    const std::string cm = n.attrs.get_string("coordinate_transformation_mode", "half_pixel");
    const std::string nm = n.attrs.get_string("nearest_mode", "round_prefer_floor");
    Idx xi(xs.size());
    for (size_t d = 0; d < xs.size(); ++d) {
      const double scale =
          scales.empty() ? static_cast<double>(ys[d]) / static_cast<double>(xs[d]) : scales[d];
      const auto tbl = cpu::nearest_indices(xs[d], ys[d], scale, cm, nm);
      if (!tbl) return fail(n.label() + ": resize mode"), "0.f";
      // The source index as a formula: identity, o / f, o * f, or o * in / out.
      const auto all = [&](auto f) {
        for (int64_t o = 0; o < ys[d]; ++o) {
          if ((*tbl)[static_cast<size_t>(o)] != f(o)) return false;
        }
        return true;
      };
      if (all([](int64_t o) { return o; })) {
        xi[d] = idx[d];
      } else if (ys[d] % xs[d] == 0 && all([&](int64_t o) { return o / (ys[d] / xs[d]); })) {
        xi[d] = fmt::format("({} / {})", idx[d], ys[d] / xs[d]);
      } else if (xs[d] % ys[d] == 0 && all([&](int64_t o) { return o * (xs[d] / ys[d]); })) {
        xi[d] = fmt::format("({} * {})", idx[d], xs[d] / ys[d]);
      } else if (all([&](int64_t o) { return o * xs[d] / ys[d]; })) {
        xi[d] = fmt::format("({} * {} / {})", idx[d], xs[d], ys[d]);
      } else {
        return fail(n.label() + ": resize index pattern"), "0.f";
      }
    }
    return at(x, xi);
  }

  std::string conv(const Node& n, const Idx& idx) {
    const Value *x = n.input(0), *w = n.input(1), *b = n.input(2);
    const Shape xs = x->type.static_shape(), ws = w->type.static_shape();
    const auto st = n.attrs.get_ints("strides", {1, 1});
    const auto pd = n.attrs.get_ints("pads", {0, 0, 0, 0});
    const auto dl = n.attrs.get_ints("dilations", {1, 1});
    const int64_t g = n.attrs.get_int("group", 1);
    if (xs.size() != 4 || ws.size() != 4 || st.size() != 2 || pd.size() != 4 || dl.size() != 2 ||
        g < 1 || n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" || xs[1] != ws[1] * g ||
        ws[0] % g != 0) {
      return fail(n.label() + ": conv form"), "0.f";
    }
    const int64_t cg = ws[1], kg = ws[0] / g;
    const std::string acc = fresh("t");
    line(fmt::format("float {} = {};", acc, b ? at(b, {idx[1]}) : "0.f"));
    std::string c0 = "0";
    if (g > 1) {
      c0 = fresh("g");
      line(fmt::format("const {} {} = {} / {} * {};", ix(), c0, idx[1], kg, cg));
    }
    std::string c = "0";
    if (cg > 1) {
      c = fresh("l");
      open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), c, cg));
    }
    const std::string xc = c0 == "0" ? c : c == "0" ? c0 : fmt::format("({} + {})", c0, c);
    const Shape ys = n.outputs[0]->type.static_shape();
    const Window win{x, ws[2], ws[3], st[0], st[1], pd[0], pd[1], dl[0], dl[1]};
    const Idx hw = window_loops(idx[2], idx[3], ys[2], ys[3], xs[2], xs[3], win, pd[0], pd[1]);
    const std::string xv = at(x, {idx[0], xc, hw[0], hw[1]});
    const std::string wv = at(w, {idx[1], c, hw[2], hw[3]});
    line(fmt::format("{} += {} * {};", acc, wv, xv));
    close_window();
    if (cg > 1) close();
    return acc;
  }

  // Opens the loops over a 2-D window at output (oh, ow) of an (out_h, out_w) output, and the
  // bounds test of the input position where it can fail; returns {ih, iw, r, s}. close_window
  // closes them.
  Idx window_loops(const std::string& oh, const std::string& ow, int64_t out_h, int64_t out_w,
                   int64_t h, int64_t w, const Window& win, int64_t ph, int64_t pw) {
    int opened = 0;
    const auto axis = [&](const std::string& o, int64_t out, int64_t size, int64_t k, int64_t s,
                          int64_t p, int64_t d) -> std::pair<std::string, std::string> {
      if (k == 1 && s == 1 && p == 0) return {o, "0"};
      std::string r = "0";
      if (k > 1) {
        r = fresh("l");
        line("#pragma unroll");
        open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), r, k));
        ++opened;
      }
      std::string e = s == 1 ? o : fmt::format("{} * {}", o, s);
      if (p) e += fmt::format(" - {}", p);
      if (k > 1) e += d == 1 ? " + " + r : fmt::format(" + {} * {}", r, d);
      const std::string i = fresh("p");
      line(fmt::format("const {} {} = {};", ix(), i, e));
      if (p > 0 || (out - 1) * s - p + (k - 1) * d >= size) {
        open(fmt::format("if ({0} >= 0 && {0} < {1})", i, size));
        ++opened;
      }
      return {i, r};
    };
    const auto [ih, r] = axis(oh, out_h, h, win.kh, win.sh, ph, win.dh);
    const auto [iw, s] = axis(ow, out_w, w, win.kw, win.sw, pw, win.dw);
    window_opened_.push_back(opened);
    return {ih, iw, r, s};
  }

  void close_window() {
    for (int k = 0; k < window_opened_.back(); ++k) close();
    window_opened_.pop_back();
  }

  std::string pool(const Node& n, const Idx& idx) {
    auto win = pool_window(n);
    if (!win) return fail(n.label() + ": pool form"), "0.f";
    const bool max = n.op == "MaxPool";
    if (max && win->x != pool_base(n)) {
      // A chain of same-size pools: one window of the summed extents and pads.
      int64_t kh = 0, kw = 0, ph = 0, pw = 0;
      const Value* x = n.outputs[0];
      while (x != pool_base(n)) {
        const Node& p = *producer(x);
        const Window link = *pool_window(p);
        kh += link.kh - 1, kw += link.kw - 1, ph += link.ph, pw += link.pw;
        x = p.input(0);
      }
      win = Window{x, kh + 1, kw + 1, 1, 1, ph, pw, 1, 1};
    }
    const Shape xs = win->x->type.static_shape(), ys = n.outputs[0]->type.static_shape();
    const std::string acc = fresh("t");
    line(fmt::format("float {} = {};", acc, max ? kLowest : "0.f"));
    if (max) {
      const Idx hw = window_loops(idx[2], idx[3], ys[2], ys[3], xs[2], xs[3], *win, win->ph,
                                  win->pw);
      line(fmt::format("{0} = fmaxf({0}, {1});", acc, at(win->x, {idx[0], idx[1], hw[0], hw[1]})));
      close_window();
      return acc;
    }
    // AveragePool: the divisor counts the window positions inside the image, or with
    // count_include_pad those inside the padded image.
    const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    const bool with_pad = n.attrs.get_int("count_include_pad", 0) != 0;
    const std::string count = fresh("n");
    line(fmt::format("int {} = 0;", count));
    const Idx hw = window_loops(idx[2], idx[3], ys[2], ys[3], xs[2] + (with_pad ? p[0] + p[2] : 0),
                                xs[3] + (with_pad ? p[1] + p[3] : 0), *win, with_pad ? 0 : p[0],
                                with_pad ? 0 : p[1]);
    line(fmt::format("++{};", count));
    if (with_pad) {
      const std::string ih = fresh("p"), iw = fresh("p");
      line(fmt::format("const {} {} = {} - {}, {} = {} - {};", ix(), ih, hw[0], p[0], iw, hw[1],
                       p[1]));
      open(fmt::format("if ({0} >= 0 && {0} < {1} && {2} >= 0 && {2} < {3})", ih, xs[2], iw,
                       xs[3]));
      line(fmt::format("{} += {};", acc, at(win->x, {idx[0], idx[1], ih, iw})));
      close();
    } else {
      line(fmt::format("{} += {};", acc, at(win->x, {idx[0], idx[1], hw[0], hw[1]})));
    }
    close_window();
    line(fmt::format("{0} = {1} > 0 ? {0} / static_cast<float>({1}) : 0.f;", acc, count));
    return acc;
  }

  std::string matmul(const Node& n, const Idx& idx) {
    const Value *a = n.input(0), *b = n.input(1);
    const Shape as = a->type.static_shape(), bs = b->type.static_shape();
    const size_t r = idx.size();
    if (as.size() < 2 || bs.size() < 2 || r < 2) return fail(n.label() + ": 1-D MatMul"), "0.f";
    const int64_t k = as.back();
    const auto batch = [&](const Shape& s) -> std::optional<Idx> {
      Idx out(s.size(), "0");
      const size_t lead = r - s.size();
      for (size_t d = 0; d + 2 < s.size(); ++d) {
        if (s[d] != 1) out[d] = idx[lead + d];
      }
      return out;
    };
    Idx ai = *batch(as), bi = *batch(bs);
    const std::string acc = fresh("t"), p = fresh("l");
    line(fmt::format("float {} = 0.f;", acc));
    open(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", ix(), p, k));
    ai[as.size() - 2] = idx[r - 2], ai[as.size() - 1] = p;
    bi[bs.size() - 2] = p, bi[bs.size() - 1] = idx[r - 1];
    const std::string av = at(a, ai);
    const std::string bv = at(b, bi);
    line(fmt::format("{} += {} * {};", acc, av, bv));
    close();
    return acc;
  }

  std::string kernel_source(const std::string& sym, int64_t threads, int64_t items, int64_t blocks,
                            int64_t work, const std::string& body) const {
    std::string params, casts;
    const auto param = [&](const std::string& p) { params += (params.empty() ? "" : ", ") + p; };
    for (size_t k = 0; k < t_.inputs.size(); ++k) {
      param(fmt::format("const void* __restrict__ p_in{}", k));
      const std::string ty = cuda_storage_type(t_.inputs[k].dtype);
      casts += fmt::format("  const {0}* __restrict__ in{1} = static_cast<const {0}*>(p_in{1});\n",
                           ty, k);
    }
    for (size_t k = 0; k < t_.constants.size(); ++k) {
      param(fmt::format("const float* __restrict__ c{}", k));
    }
    for (size_t k = 0; k < t_.outputs.size(); ++k) {
      param(fmt::format("void* __restrict__ p_out{}", k));
      const std::string ty = cuda_storage_type(t_.outputs[k].dtype);
      casts += fmt::format("  {0}* __restrict__ out{1} = static_cast<{0}*>(p_out{1});\n", ty, k);
    }
    param("void* __restrict__ scratch");
    if (scratch_floats_ > 0) {
      casts += "  float* __restrict__ scratch_f = static_cast<float*>(scratch);\n";
    }
    if (int64_scratch_) {
      casts += "  yc_i64* __restrict__ scratch_l = static_cast<yc_i64*>(scratch);\n";
    }
    return fmt::format(fmt::runtime(cuh::generic_kernel), fmt::arg("threads", threads),
                       fmt::arg("sym", sym), fmt::arg("params", params), fmt::arg("casts", casts),
                       fmt::arg("ix", ix()), fmt::arg("items", items),
                       fmt::arg("stride", fmt::format("{}{}", blocks * threads, wide_ ? "ll" : "")),
                       fmt::arg("work", work), fmt::arg("body", body));
  }

  const GenericTask& t_;
  std::string why_;
  std::map<const Value*, size_t> input_, constant_, output_;
  std::map<const Value*, const Node*> producer_;
  std::set<const Value*> forced_;  ///< materialised in scratch
  std::map<const Value*, int64_t> scratch_base_;
  std::map<const Value*, int> level_;
  std::vector<Root> roots_;
  int max_level_ = 0;
  int64_t scratch_floats_ = 0;
  bool wide_ = false;  ///< 64-bit index arithmetic
  bool int64_scratch_ = false;

  std::string code_;
  int indent_ = 0;
  int next_ = 0;
  const Root* root_ = nullptr;
  std::vector<std::map<std::string, std::string>> memo_;
  std::vector<int> window_opened_;
};

}  // namespace

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
