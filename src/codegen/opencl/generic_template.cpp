#include "codegen/opencl/generic_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "codegen/cpu/emit_util.h"
#include "codegen/cpu/resize_template.h"

namespace yoloc::codegen::opencl {
namespace {

/// Thrown while emitting a node the template does not take; generic_task_from_group reports it.
struct Unsupported {
  std::string why;
};

Shape shape_of(const Value* v) {
  if (!v || !v->type.is_static()) throw Unsupported{"a value without a static shape"};
  if (v->type.dtype != DType::kFloat32)
    throw Unsupported{fmt::format("'{}' is {}, not float32", v->name, dtype_name(v->type.dtype))};
  return v->type.static_shape();
}

/// Integer contents of a constant (int64 or int32), for Slice / Split / Resize operands.
std::vector<int64_t> const_ints(const Value* v) {
  if (!v || !v->is_constant()) throw Unsupported{"a non-constant shape operand"};
  const Tensor t = v->data.cast(DType::kInt64);
  const int64_t* d = t.data<int64_t>();
  return std::vector<int64_t>(d, d + t.numel());
}

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

/// sum(idx[d] * strides[d]), skipping zero strides.
std::string offset_expr(const std::vector<std::string>& idx, const std::vector<int64_t>& strides) {
  std::string e;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (strides[d] == 0 || idx[d] == "0") continue;
    e += (e.empty() ? "" : " + ") +
         (strides[d] == 1 ? fmt::format("({})", idx[d]) : fmt::format("({}) * {}", idx[d], strides[d]));
  }
  return e.empty() ? "0" : e;
}

/// Emits the OpenCL statements computing values of a group at given logical indices.
class Emitter {
 public:
  explicit Emitter(const GenericTask& t) {
    for (const Node* n : t.nodes)
      for (const Value* o : n->outputs) producer_[o] = n;
    for (size_t i = 0; i < t.inputs.size(); ++i) arg_[t.inputs[i]] = {static_cast<int>(i), t.strides[i]};
  }

  std::string code;

  /// An expression holding v at indices idx (one int expression per dim).
  std::string at(const Value* v, const std::vector<std::string>& idx) {
    std::string key = fmt::format("{}", static_cast<const void*>(v));
    for (const std::string& i : idx) key += "|" + i;
    for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
      const auto f = it->find(key);
      if (f != it->end()) return f->second;
    }
    std::string e = compute(v, idx);
    memo_.back()[key] = e;
    return e;
  }

  std::string tmp(const std::string& type, const std::string& expr) {
    const std::string name = fmt::format("t{}", next_++);
    line(fmt::format("{} {} = {};", type, name, expr));
    return name;
  }
  void line(const std::string& s) { code += std::string(2 * indent_, ' ') + s + "\n"; }
  void open(const std::string& head) {
    line(head + " {");
    ++indent_;
    memo_.emplace_back();
  }
  void close() {
    --indent_;
    line("}");
    memo_.pop_back();
  }
  std::string var(const char* base) { return fmt::format("{}{}", base, next_++); }

 private:
  struct Arg {
    int index = 0;
    std::vector<int64_t> strides;
  };

  std::string compute(const Value* v, const std::vector<std::string>& idx) {
    const Shape s = shape_of(v);
    if (v->is_constant() && v->data.numel() == 1) return float_literal(v->data.data<float>()[0]);
    if (const auto a = arg_.find(v); a != arg_.end()) {
      const std::vector<int64_t> strides =
          a->second.strides.empty() ? cpu::dense_strides(s) : a->second.strides;
      return tmp("float", fmt::format("p{}[{}]", a->second.index, offset_expr(idx, strides)));
    }
    const auto p = producer_.find(v);
    if (p == producer_.end()) throw Unsupported{fmt::format("'{}' is not an operand", v->name)};
    const Node& n = *p->second;
    const std::string& op = n.op;
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
        op == "Identity")
      return reshape(n, idx);
    if (op == "Transpose") {
      std::vector<int64_t> perm = n.attrs.get_ints("perm", {});
      if (perm.empty())
        for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) perm.push_back(d);
      std::vector<std::string> in(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) in[perm[d]] = idx[d];
      return at(n.input(0), in);
    }
    if (op == "Slice") return slice(n, idx);
    if (op == "Split") return split(n, v, idx);
    if (op == "Concat") return concat(n, idx);
    if (op == "Resize") return resize(n, idx);
    if (op == "Conv") return conv(n, idx);
    if (op == "MaxPool") return max_pool(n, idx);
    if (op == "Softmax") return softmax(n, idx);
    if (op == "MatMul") return matmul(n, idx);
    return elementwise(n, idx);
  }

  std::string elementwise(const Node& n, const std::vector<std::string>& idx) {
    std::vector<std::string> args;
    const Shape out = shape_of(n.outputs.at(0));
    for (const Value* in : n.inputs) {
      if (!in) {
        args.emplace_back();
        continue;
      }
      const Shape s = shape_of(in);
      std::vector<std::string> sub;
      for (size_t d = 0; d < s.size(); ++d)
        sub.push_back(s[d] == 1 ? "0" : idx[d + out.size() - s.size()]);
      args.push_back(at(in, sub));
    }
    auto e = cpu::elementwise_expr(n, args);
    if (!e) throw Unsupported{fmt::format("op {}", n.op)};
    cpu::replace_all(*e, "std::", "");
    return tmp("float", *e);
  }

  std::string reshape(const Node& n, const std::vector<std::string>& idx) {
    const Shape out = shape_of(n.outputs.at(0)), in = shape_of(n.input(0));
    if (out == in) return at(n.input(0), idx);
    const std::string flat = tmp("int", offset_expr(idx, cpu::dense_strides(out)));
    const std::vector<int64_t> st = cpu::dense_strides(in);
    std::vector<std::string> sub;
    for (size_t d = 0; d < in.size(); ++d)
      sub.push_back(in[d] == 1 ? "0" : fmt::format("({} / {}) % {}", flat, st[d], in[d]));
    return at(n.input(0), sub);
  }

  std::string slice(const Node& n, const std::vector<std::string>& idx) {
    const Shape in = shape_of(n.input(0));
    const std::vector<int64_t> starts = const_ints(n.input(1));
    std::vector<int64_t> axes, steps;
    if (n.has_input(3)) {
      axes = const_ints(n.input(3));
    } else {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    steps = n.has_input(4) ? const_ints(n.input(4)) : std::vector<int64_t>(starts.size(), 1);
    std::vector<std::string> sub = idx;
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = norm_axis(axes[i], in.size()), dim = in[a];
      int64_t st = starts[i] < 0 ? starts[i] + dim : starts[i];
      st = steps[i] > 0 ? std::clamp<int64_t>(st, 0, dim) : std::clamp<int64_t>(st, 0, dim - 1);
      sub[a] = fmt::format("{} + ({}) * {}", st, idx[a], steps[i]);
    }
    return at(n.input(0), sub);
  }

  std::string split(const Node& n, const Value* v, const std::vector<std::string>& idx) {
    const int64_t a = norm_axis(n.attrs.get_int("axis", 0), idx.size());
    int64_t offset = 0;
    for (const Value* o : n.outputs) {
      if (o == v) break;
      offset += shape_of(o)[a];
    }
    std::vector<std::string> sub = idx;
    sub[a] = fmt::format("{} + {}", offset, idx[a]);
    return at(n.input(0), sub);
  }

  std::string concat(const Node& n, const std::vector<std::string>& idx) {
    const int64_t a = norm_axis(n.attrs.get_int("axis", 0), idx.size());
    const std::string r = var("t");
    line(fmt::format("float {};", r));
    const std::string i = tmp("int", idx[a]);
    int64_t lo = 0;
    for (const Value* in : n.inputs) {
      const int64_t hi = lo + shape_of(in)[a];
      open(fmt::format("if ({} >= {} && {} < {})", i, lo, i, hi));
      std::vector<std::string> sub = idx;
      sub[a] = fmt::format("{} - {}", i, lo);
      line(fmt::format("{} = {};", r, at(in, sub)));
      close();
      lo = hi;
    }
    return r;
  }

  std::string resize(const Node& n, const std::vector<std::string>& idx) {
    if (n.attrs.get_string("mode", "nearest") != "nearest") throw Unsupported{"non-nearest Resize"};
    const Shape out = shape_of(n.outputs.at(0)), in = shape_of(n.input(0));
    std::vector<std::string> sub = idx;
    for (size_t d = 0; d < in.size(); ++d) {
      if (in[d] == out[d]) continue;
      const auto rows = cpu::nearest_indices(
          in[d], out[d], static_cast<double>(out[d]) / static_cast<double>(in[d]),
          n.attrs.get_string("coordinate_transformation_mode", "half_pixel"),
          n.attrs.get_string("nearest_mode", "round_prefer_floor"));
      if (!rows) throw Unsupported{"a Resize mode"};
      for (int64_t i = 0; i < out[d]; ++i)
        if ((*rows)[i] != i * in[d] / out[d]) throw Unsupported{"a Resize of non-floor indices"};
      sub[d] = fmt::format("({}) * {} / {}", idx[d], in[d], out[d]);
    }
    return at(n.input(0), sub);
  }

  /// Window attributes of a 2-D Conv / MaxPool.
  struct Window {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  };
  static Window window(const Node& n, const Shape& wshape) {
    const auto k = n.attrs.get_ints("kernel_shape", {wshape.size() >= 2 ? wshape[wshape.size() - 2] : 1,
                                                     wshape.empty() ? 1 : wshape.back()});
    const auto s = n.attrs.get_ints("strides", {1, 1});
    const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
    const auto d = n.attrs.get_ints("dilations", {1, 1});
    if (k.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2)
      throw Unsupported{fmt::format("a {} that is not 2-D", n.op)};
    if (n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET") throw Unsupported{"auto_pad"};
    return {k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
  }

  std::string conv(const Node& n, const std::vector<std::string>& idx) {
    const Shape x = shape_of(n.input(0)), w = shape_of(n.input(1));
    if (x.size() != 4) throw Unsupported{"a Conv that is not 2-D"};
    const Window win = window(n, w);
    const int64_t groups = n.attrs.get_int("group", 1), cg = w[1], kg = w[0] / groups;
    const std::string acc = var("acc");
    line(fmt::format("float {} = {};", acc, n.has_input(2) ? at(n.input(2), {idx[1]}) : "0.f"));
    const std::string c = var("c"), y = var("y"), xx = var("x");
    const std::string c0 = groups == 1 ? "0" : tmp("int", fmt::format("(({}) / {}) * {}", idx[1], kg, cg));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", c, cg));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", y, win.kh));
    const std::string ih = tmp("int", fmt::format("({}) * {} - {} + {} * {}", idx[2], win.sh, win.ph, y, win.dh));
    line(fmt::format("if ({0} < 0 || {0} >= {1}) continue;", ih, x[2]));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", xx, win.kw));
    const std::string iw = tmp("int", fmt::format("({}) * {} - {} + {} * {}", idx[3], win.sw, win.pw, xx, win.dw));
    line(fmt::format("if ({0} < 0 || {0} >= {1}) continue;", iw, x[3]));
    const std::string xv = at(n.input(0), {idx[0], fmt::format("{} + {}", c0, c), ih, iw});
    const std::string wv = at(n.input(1), {idx[1], c, y, xx});
    line(fmt::format("{} = fma({}, {}, {});", acc, xv, wv, acc));
    close();
    close();
    close();
    return acc;
  }

  std::string max_pool(const Node& n, const std::vector<std::string>& idx) {
    const Shape out = shape_of(n.outputs.at(0));
    if (out.size() != 4 || n.outputs.size() != 1) throw Unsupported{"a MaxPool that is not 2-D"};
    // Compose a chain of stride-1 "same" pools: max of maxes over the union window.
    const auto same = [&](const Node& p) {
      const Window w = window(p, {});
      return w.sh == 1 && w.sw == 1 && w.dh == 1 && w.dw == 1 && w.kh % 2 == 1 && w.kw % 2 == 1 &&
             w.ph == w.kh / 2 && w.pw == w.kw / 2 &&
             shape_of(p.input(0)) == shape_of(p.outputs.at(0));
    };
    Window win = window(n, {});
    const Value* src = n.input(0);
    if (same(n)) {
      for (auto p = producer_.find(src); p != producer_.end() && p->second->op == "MaxPool" &&
                                         same(*p->second);
           p = producer_.find(src)) {
        const Window inner = window(*p->second, {});
        win.kh += inner.kh - 1;
        win.kw += inner.kw - 1;
        src = p->second->input(0);
      }
      win.ph = win.kh / 2;
      win.pw = win.kw / 2;
    }
    const Shape x = shape_of(src);
    const std::string acc = var("acc"), y = var("y"), xx = var("x");
    line(fmt::format("float {} = -INFINITY;", acc));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", y, win.kh));
    const std::string ih = tmp("int", fmt::format("({}) * {} - {} + {} * {}", idx[2], win.sh, win.ph, y, win.dh));
    line(fmt::format("if ({0} < 0 || {0} >= {1}) continue;", ih, x[2]));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", xx, win.kw));
    const std::string iw = tmp("int", fmt::format("({}) * {} - {} + {} * {}", idx[3], win.sw, win.pw, xx, win.dw));
    line(fmt::format("if ({0} < 0 || {0} >= {1}) continue;", iw, x[3]));
    line(fmt::format("{0} = fmax({0}, {1});", acc, at(src, {idx[0], idx[1], ih, iw})));
    close();
    close();
    return acc;
  }

  /// numpy matmul of operands of rank >= 2 (leading dims broadcast): a loop over the inner dim.
  std::string matmul(const Node& n, const std::vector<std::string>& idx) {
    const Shape a = shape_of(n.input(0)), b = shape_of(n.input(1)), out = shape_of(n.outputs.at(0));
    if (a.size() < 2 || b.size() < 2) throw Unsupported{"a MatMul of a 1-D operand"};
    const auto operand = [&](const Shape& s, const std::string& row, const std::string& col) {
      std::vector<std::string> sub;
      for (size_t d = 0; d + 2 < s.size(); ++d)
        sub.push_back(s[d] == 1 ? "0" : idx[d + out.size() - s.size()]);
      sub.push_back(row);
      sub.push_back(col);
      return sub;
    };
    const std::string acc = var("acc"), k = var("k");
    line(fmt::format("float {} = 0.f;", acc));
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, a.back()));
    const std::string x = at(n.input(0), operand(a, idx[out.size() - 2], k));
    const std::string y = at(n.input(1), operand(b, k, idx[out.size() - 1]));
    line(fmt::format("{0} = fma({1}, {2}, {0});", acc, x, y));
    close();
    return acc;
  }

  std::string softmax(const Node& n, const std::vector<std::string>& idx) {
    const Shape s = shape_of(n.input(0));
    const int64_t a = norm_axis(n.attrs.get_int("axis", -1), s.size());
    const std::string m = var("m"), sum = var("s"), j = var("j");
    line(fmt::format("float {} = -INFINITY, {} = 0.f;", m, sum));
    std::vector<std::string> sub = idx;
    sub[a] = j;
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", j, s[a]));
    line(fmt::format("{0} = fmax({0}, {1});", m, at(n.input(0), sub)));
    close();
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", j, s[a]));
    line(fmt::format("{0} += exp({1} - {2});", sum, at(n.input(0), sub), m));
    close();
    return tmp("float", fmt::format("exp({} - {}) / {}", at(n.input(0), idx), m, sum));
  }

  std::map<const Value*, const Node*> producer_;
  std::map<const Value*, Arg> arg_;
  std::vector<std::map<std::string, std::string>> memo_{1};
  int indent_ = 1;
  int next_ = 0;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

/// The body of output `o`'s kernel (after kernel_head): index decomposition, the value, the store.
std::string output_body(const GenericTask& t, size_t o) {
  const Value* v = t.outputs[o];
  const Shape s = shape_of(v);
  Emitter e(t);
  const int64_t total = shape_numel(s);
  e.line(fmt::format("const int gid = get_global_id(0);\n  if (gid >= {}) return;", total));
  std::vector<std::string> idx(s.size());
  const std::vector<int64_t> st = cpu::dense_strides(s);
  for (size_t d = 0; d < s.size(); ++d)
    idx[d] = s[d] == 1 ? "0" : e.tmp("int", d == 0 ? fmt::format("gid / {}", st[d])
                                                   : fmt::format("(gid / {}) % {}", st[d], s[d]));
  const std::string val = e.at(v, idx);
  // Launch o binds the inputs, then output o alone.
  e.line(fmt::format("p{}[{}] = {};", t.inputs.size(),
                     offset_expr(idx, t.strides[t.inputs.size() + o]), val));
  return e.code;
}

}  // namespace

std::string GenericTask::key() const {
  std::string ops;
  for (const Node* n : nodes) ops += (ops.empty() ? "" : "+") + n->op;
  return fmt::format("cl_generic {} {}", ops, body_hash);
}

std::optional<GenericTask> generic_task_from_group(const Graph& g, const FusedGroup& grp,
                                                   const StridesOf& strides_of, std::string* why) {
  const cpu::GroupIO io = cpu::group_io(g, grp);
  GenericTask t;
  t.nodes = io.nodes;
  t.inputs = io.inputs;
  t.outputs = io.outputs;
  try {
    for (const Value* v : t.inputs) {
      if (v->is_constant() && v->type.dtype != DType::kFloat32 && v->data.numel() > 1) {
        // Integer shape operands (Slice starts, Reshape shapes) are read at compile time.
        t.strides.emplace_back();
        continue;
      }
      t.strides.push_back(v->is_constant() ? std::vector<int64_t>{} : strides_of(v));
    }
    for (const Value* v : t.outputs) t.strides.push_back(strides_of(v));
    std::string all;
    for (size_t o = 0; o < t.outputs.size(); ++o) all += output_body(t, o);
    for (const auto& s : t.strides) all += fmt::format("{}", fmt::join(s, ","));
    t.body_hash = fmt::format("{:016x}", fnv1a(all));
  } catch (const Unsupported& u) {
    if (why) *why = u.why;
    return std::nullopt;
  }
  return t;
}

ScheduleSpace GenericTemplate::space(const GenericTask&) {
  return {{{"local", "work-group size", {64, 128, 256}}}};
}

bool GenericTemplate::valid(const GenericTask& t, const ScheduleConfig& cfg) {
  return cfg.in_space(space(t));
}

ScheduleConfig GenericTemplate::default_config(const GenericTask&) { return {{{"local", 128}}}; }

ClLowered GenericTemplate::emit(const GenericTask& t, const ScheduleConfig& cfg,
                                const std::string& prefix) {
  YOLOC_CHECK(valid(t, cfg), "generic OpenCL config {} is not valid", cfg.str());
  const int64_t local = cfg.get("local");
  ClLowered k;
  for (const Value* v : t.inputs) {
    ClArg a;
    if (v->is_constant()) {
      const Tensor f = v->data.cast(DType::kFloat32);
      a.data.assign(f.data<float>(), f.data<float>() + f.numel());
    } else {
      a.value = v;
    }
    k.args.push_back(std::move(a));
  }
  for (const Value* v : t.outputs) k.args.push_back({v, {}, true});
  for (size_t o = 0; o < t.outputs.size(); ++o) {
    ClLaunch l;
    l.symbol = fmt::format("{}_{}", prefix, o);
    const int64_t total = shape_numel(t.outputs[o]->type.static_shape());
    l.global[0] = (total + local - 1) / local * local;
    l.local[0] = local;
    l.local[1] = l.local[2] = 1;
    for (size_t i = 0; i < t.inputs.size(); ++i) l.args.push_back(static_cast<int>(i));
    l.args.push_back(static_cast<int>(t.inputs.size() + o));
    k.source += kernel_head(l.symbol, l.args.size()) + output_body(t, o) + "}\n";
    k.launches.push_back(std::move(l));
  }
  return k;
}

}  // namespace yoloc::codegen::opencl
