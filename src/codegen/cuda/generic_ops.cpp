// The Emitter's index arithmetic and loops of the ONNX operators (generic_emitter.h).
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
#include "ir/op_registry.h"

namespace yoloc::codegen::cuda::generic_detail {

Emitter::Idx Emitter::reshape_index(const Node& n, const Idx& idx) {
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

std::string Emitter::transpose(const Node& n, const Idx& idx) {
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

std::optional<std::vector<int64_t>> Emitter::ints(const Node& n, size_t i) {
  const Value* v = n.input(i);
  if (!v) return std::vector<int64_t>{};
  if (!v->known()) return std::nullopt;
  return v->known()->to_int64s();
}

std::string Emitter::slice(const Node& n, const Idx& idx) {
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

std::string Emitter::split(const Node& n, const Value* v, const Idx& idx) {
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

std::string Emitter::concat(const Node& n, const Idx& idx) {
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
    open(k == 0                  ? fmt::format("if ({} < {})", idx[axis], end)
         : k + 1 == parts.size() ? "else"
                                 : fmt::format("else if ({} < {})", idx[axis], end));
    Idx xi = idx;
    if (first) xi[axis] = fmt::format("({} - {})", idx[axis], first);
    line(fmt::format("{} = {};", t, at(x, xi)));
    close();
  }
  return t;
}

std::string Emitter::index_var(const std::string& ival, int64_t dim) {
  const std::string p = fresh("p");
  line(fmt::format("const {0} {1} = static_cast<{0}>(yc_index({2}, {3}));", ix(), p, ival, dim));
  return p;
}

std::string Emitter::gather(const Node& n, const Idx& idx) {
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

std::string Emitter::gather_elements(const Node& n, const Idx& idx) {
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

std::string Emitter::tile(const Node& n, const Idx& idx) {
  const Shape xs = n.input(0)->type.static_shape();
  if (xs.size() != idx.size()) return fail(n.label() + ": rank"), "0.f";
  Idx xi(xs.size(), "0");
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] != 1) xi[d] = fmt::format("({} % {})", idx[d], xs[d]);
  }
  return at(n.input(0), xi);
}

std::string Emitter::reduce_extremum(const Node& n, const Idx& idx) {
  const Value *x = n.input(0), *y = n.outputs[0];
  const Shape xs = x->type.static_shape();
  std::vector<int64_t> axes;
  if (n.inputs.size() > 1 && n.input(1)) {
    const auto a = ints(n, 1);
    if (!a) return fail(n.label() + ": axes not known"), "0.f";
    axes = *a;
  }
  std::vector<bool> reduced(xs.size(), axes.empty() && !n.attrs.get_int("noop_with_empty_axes", 0));
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

std::string Emitter::resize(const Node& n, const Idx& idx) {
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

std::string Emitter::conv(const Node& n, const Idx& idx) {
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

Emitter::Idx Emitter::window_loops(const std::string& oh, const std::string& ow, int64_t out_h,
                                   int64_t out_w, int64_t h, int64_t w, const Window& win,
                                   int64_t ph, int64_t pw) {
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

void Emitter::close_window() {
  for (int k = 0; k < window_opened_.back(); ++k) close();
  window_opened_.pop_back();
}

std::string Emitter::pool(const Node& n, const Idx& idx) {
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
    const Idx hw = window_loops(idx[2], idx[3], ys[2], ys[3], xs[2], xs[3], *win, win->ph, win->pw);
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
    open(fmt::format("if ({0} >= 0 && {0} < {1} && {2} >= 0 && {2} < {3})", ih, xs[2], iw, xs[3]));
    line(fmt::format("{} += {};", acc, at(win->x, {idx[0], idx[1], ih, iw})));
    close();
  } else {
    line(fmt::format("{} += {};", acc, at(win->x, {idx[0], idx[1], hw[0], hw[1]})));
  }
  close_window();
  line(fmt::format("{0} = {1} > 0 ? {0} / static_cast<float>({1}) : 0.f;", acc, count));
  return acc;
}

std::string Emitter::matmul(const Node& n, const Idx& idx) {
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

}  // namespace yoloc::codegen::cuda::generic_detail
