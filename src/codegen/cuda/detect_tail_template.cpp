#include "codegen/cuda/detect_tail_template.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <variant>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

using Operand = DetectTailOperand;


// Channels `channel` .. + `channels` of head output `input`.
struct Segment {
  int input = 0;
  int64_t channel = 0, channels = 0;
};
using Segments = std::vector<Segment>;

int64_t total(const Segments& s) {
  int64_t c = 0;
  for (const Segment& x : s) c += x.channels;
  return c;
}

// Channels start .. start + count of s.
Segments cut(const Segments& s, int64_t start, int64_t count) {
  Segments out;
  int64_t at = 0;
  for (const Segment& x : s) {
    const int64_t lo = std::max(start, at), hi = std::min(start + count, at + x.channels);
    if (lo < hi) out.push_back({x.input, x.channel + lo - at, hi - lo});
    at += x.channels;
  }
  return out;
}

// A 4-D value [N, C, H, W] of head output channels (view Concats and Splits of head outputs on
// the channel axis).
struct Head {
  Segments seg;
  int64_t h = 0, w = 0;
};

// Head channels of every anchor: a value [N, channels, sum of h*w], the parts (one level each)
// in anchor order.
struct Gathered {
  std::vector<Head> parts;
  int64_t channels = 0;
  int64_t anchors() const {
    int64_t a = 0;
    for (const Head& p : parts) a += p.h * p.w;
    return a;
  }
  Gathered cut(int64_t start, int64_t count) const {
    Gathered g{parts, count};
    for (Head& p : g.parts) p.seg = cuda::cut(p.seg, start, count);
    return g;
  }
};

// The DFL logits re-addressed: dims labelled 'n' (image), 's' (side), 'r' (bin), 'a' (anchor),
// '1' (the conv's single output channel, after the conv).
struct Dfl {
  std::array<char, 4> labels{};
  bool softmax = false;
  bool conv = false;
};

// Per-anchor values [N, channels, A] of the box decode, one operand per channel.
struct Decoded {
  std::vector<Operand> ch;
};

// The sigmoids of gathered channels.
struct Classes {
  Gathered src;
};

// The group's output.
struct Final {};

using Tracked = std::variant<Head, Gathered, Dfl, Decoded, Classes, Final>;

std::optional<Shape> static_shape(const Value* v) {
  if (!v || !v->type.has_rank || !v->type.is_static()) return std::nullopt;
  return v->type.static_shape();
}

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::optional<std::vector<int64_t>> known_ints(const Value* v) {
  if (!v || !v->known()) return std::nullopt;
  return v->known()->to_int64s();
}

// A float literal that reads back exactly (hexadecimal).
std::string literal(float f) { return fmt::format("{:a}f", static_cast<double>(f)); }

std::string operand_str(const Operand& o) {
  switch (o.kind) {
    case Operand::Kind::kDistance: return fmt::format("d{}", o.index);
    case Operand::Kind::kTemp: return fmt::format("t{}", o.index);
    case Operand::Kind::kTable: return fmt::format("T{}", o.index);
    case Operand::Kind::kLiteral: return fmt::format("{}", o.literal);
  }
  return "?";
}

class Matcher {
 public:
  Matcher(const Graph& g, const FusedGroup& grp,
          const std::function<CudaOperand(const Value*)>& operand_of)
      : g_(g), grp_(grp), operand_of_(operand_of) {}

  std::optional<DetectTailTask> run(std::string* why) {
    const cpu::GroupIO io = cpu::group_io(g_, grp_);
    if (io.outputs.size() != 1) return refuse(why, "not one output");
    output_ = io.outputs[0];
    for (const Node* n : io.nodes) {
      if (!node(*n)) return refuse(why, n->label() + ": " + why_);
    }
    if (!final_) return refuse(why, "no output concat of boxes and class scores");
    return task_;
  }

 private:
  std::optional<DetectTailTask> refuse(std::string* why, const std::string& what) {
    if (why) *why = what;
    return std::nullopt;
  }
  bool fail(const std::string& what) {
    why_ = what;
    return false;
  }

  template <class T>
  const T* get(const Value* v) {
    const auto it = tracked_.find(v);
    return it == tracked_.end() ? nullptr : std::get_if<T>(&it->second);
  }

  bool node(const Node& n) {
    for (const Value* o : n.outputs) {
      if (!static_shape(o)) return fail("not a static shape");
      if (o != output_ && !g_.is_output(o)) continue;
      if (o != output_ || n.op != "Concat") return fail("a value leaves the group");
    }
    if (n.op == "Reshape") return reshape(n);
    if (n.op == "Concat") return concat(n);
    if (n.op == "Split") return split(n);
    if (n.op == "Slice") return slice(n);
    if (n.op == "Transpose") return transpose(n);
    if (n.op == "Softmax") return softmax(n);
    if (n.op == "Conv") return conv(n);
    if (n.op == "Sigmoid") return sigmoid(n);
    if (n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div") return arith(n);
    return fail("op not in the DFL tail");
  }

  // The index of head output v among the task's inputs (added on first use).
  std::optional<int> input_index(const Value* v) {
    for (size_t i = 0; i < task_.inputs.size(); ++i) {
      if (task_.inputs[i].value == v) return static_cast<int>(i);
    }
    // A head output: an activation made outside the group.
    const auto s = static_shape(v);
    if (v->is_constant() || (v->producer && v->producer->group == grp_.id) || !s || s->size() != 4)
      return std::nullopt;
    CudaOperand o = operand_of_(v);
    if (!is_storage_dtype(o.dtype) || o.strides.size() != 4) return std::nullopt;
    task_.inputs.push_back(std::move(o));
    return static_cast<int>(task_.inputs.size() - 1);
  }

  // x as head output channels: a Head value of the group, or a head output.
  std::optional<Head> head_of(const Value* x) {
    if (const Head* h = get<Head>(x)) return *h;
    if (tracked_.count(x)) return std::nullopt;
    const auto in = input_index(x);
    if (!in) return std::nullopt;
    const Shape xs = *static_shape(x);
    return Head{{{*in, 0, xs[1]}}, xs[2], xs[3]};
  }

  bool set_batch(int64_t n) {
    if (task_.n == 0) task_.n = n;
    return task_.n == n;
  }

  bool reshape(const Node& n) {
    const Value* x = n.input(0);
    const Value* y = n.outputs.at(0);
    const Shape ys = *static_shape(y);
    if (const Gathered* gth = get<Gathered>(x)) {
      // The DFL view [N, S, R, A]: channel s * R + r.
      if (ys.size() != 4 || !set_batch(ys[0]) || ys[1] * ys[2] != gth->channels ||
          ys[3] != gth->anchors() || ys[1] < 1 || ys[2] < 1)
        return fail("not a [N, sides, bins, anchors] view of the box channels");
      if (box_) return fail("a second DFL");
      box_ = *gth;
      task_.sides = ys[1];
      task_.bins = ys[2];
      task_.anchors = ys[3];
      tracked_[y] = Dfl{{'n', 's', 'r', 'a'}, false, false};
      return true;
    }
    if (const Dfl* d = get<Dfl>(x)) {
      if (!d->conv || d->labels[1] != '1' || d->labels[2] != 's' || d->labels[3] != 'a' ||
          ys != Shape{task_.n, task_.sides, task_.anchors})
        return fail("not the DFL distances as [N, sides, anchors]");
      Decoded dec;
      for (int64_t s = 0; s < task_.sides; ++s) dec.ch.push_back({Operand::Kind::kDistance, s, 0});
      tracked_[y] = dec;
      return true;
    }
    const auto head = head_of(x);
    const auto xs = static_shape(x);
    if (!head || !xs || ys.size() != 3 || !set_batch(ys[0]) || ys[0] != (*xs)[0] ||
        ys[1] != (*xs)[1] || ys[2] != (*xs)[2] * (*xs)[3])
      return fail("not a head output [N, C, H, W] flattened to [N, C, H*W]");
    tracked_[y] = Gathered{{*head}, ys[1]};
    return true;
  }

  bool concat(const Node& n) {
    const Value* y = n.outputs.at(0);
    const Shape ys = *static_shape(y);
    const int64_t axis = norm_axis(n.attrs.get_int("axis", 0), ys.size());
    if (ys.size() == 4 && axis == 1) {
      // Head outputs side by side (a view Concat the head convs write into).
      Head out;
      for (const Value* in : n.inputs) {
        const auto h = head_of(in);
        if (!h || (!out.seg.empty() && (h->h != out.h || h->w != out.w)))
          return fail("not a concat of head outputs");
        out.seg.insert(out.seg.end(), h->seg.begin(), h->seg.end());
        out.h = h->h;
        out.w = h->w;
      }
      tracked_[y] = out;
      return true;
    }
    if (ys.size() != 3) return fail("not rank 3");
    size_t gathered = 0, decoded = 0, classes = 0;
    for (const Value* in : n.inputs) {
      gathered += get<Gathered>(in) != nullptr;
      decoded += get<Decoded>(in) != nullptr;
      classes += get<Classes>(in) != nullptr;
    }
    if (gathered == n.inputs.size() && axis == 2) {
      Gathered out = *get<Gathered>(n.inputs[0]);
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        const Gathered& p = *get<Gathered>(n.inputs[i]);
        if (p.channels != out.channels) return fail("levels of different channels");
        out.parts.insert(out.parts.end(), p.parts.begin(), p.parts.end());
      }
      tracked_[y] = out;
      return true;
    }
    if (axis != 1 || decoded + classes != n.inputs.size())
      return fail("not a concat of levels, boxes or class scores");
    if (classes == 0) {
      Decoded out;
      for (const Value* in : n.inputs) {
        const auto& ch = get<Decoded>(in)->ch;
        out.ch.insert(out.ch.end(), ch.begin(), ch.end());
      }
      tracked_[y] = out;
      return true;
    }
    if (y != output_ || classes != 1) return fail("class scores concatenated inside the group");
    // The output: box channels and the class sigmoids.
    int64_t k = 0;
    for (const Value* in : n.inputs) {
      if (const Classes* c = get<Classes>(in)) {
        if (!cls_) cls_ = c->src;
        task_.class_offset = k;
        k += c->src.channels;
      } else {
        for (const Operand& o : get<Decoded>(in)->ch) {
          task_.box_out.push_back(o);
          ++k;
        }
      }
    }
    if (k != ys[1]) return fail("channels do not add up");
    if (task_.class_offset != 0 && task_.class_offset != static_cast<int64_t>(task_.box_out.size()))
      return fail("class scores between box channels");
    return finish(y, ys);
  }

  bool split(const Node& n) {
    const Value* x = n.input(0);
    const Gathered* gth = get<Gathered>(x);
    const auto head = gth ? std::nullopt : head_of(x);
    const size_t rank = gth ? 3 : 4;
    if ((!gth && !head) || norm_axis(n.attrs.get_int("axis", 0), rank) != 1)
      return fail("not a split of head channels");
    int64_t first = 0;
    for (const Value* o : n.outputs) {
      const Shape os = *static_shape(o);
      if (os.size() != rank) return fail("rank");
      if (gth) {
        tracked_[o] = gth->cut(first, os[1]);
      } else {
        tracked_[o] = Head{cut(head->seg, first, os[1]), head->h, head->w};
      }
      first += os[1];
    }
    return first == (gth ? gth->channels : total(head->seg)) || fail("split sizes do not add up");
  }

  bool slice(const Node& n) {
    const Value* x = n.input(0);
    const Value* y = n.outputs.at(0);
    const Shape xs = *static_shape(x), ys = *static_shape(y);
    const auto starts = known_ints(n.input(1));
    const auto ends = known_ints(n.input(2));
    const auto axes = n.input(3) ? known_ints(n.input(3)) : std::vector<int64_t>{0};
    const auto steps = n.input(4) ? known_ints(n.input(4)) : std::vector<int64_t>{1};
    if ((xs.size() != 3 && xs.size() != 4) || !starts || !ends || !axes || !steps ||
        starts->size() != 1 || ends->size() != 1 || axes->size() != 1 || steps->size() != 1 ||
        (*steps)[0] != 1 || norm_axis((*axes)[0], xs.size()) != 1)
      return fail("not a step-1 slice of channels");
    const int64_t dim = xs[1];
    const auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
    const int64_t start = clamp((*starts)[0]), end = std::max(start, clamp((*ends)[0]));
    if (ys[1] != end - start) return fail("slice size");
    if (xs.size() == 4) {
      const auto head = head_of(x);
      if (!head) return fail("slice of a 4-D value other than head outputs");
      tracked_[y] = Head{cut(head->seg, start, end - start), head->h, head->w};
      return true;
    }
    if (const Gathered* gth = get<Gathered>(x)) {
      tracked_[y] = gth->cut(start, end - start);
      return true;
    }
    if (const Decoded* d = get<Decoded>(x)) {
      tracked_[y] = Decoded{{d->ch.begin() + start, d->ch.begin() + end}};
      return true;
    }
    return fail("slice of a value other than gathered channels or boxes");
  }

  bool transpose(const Node& n) {
    const Dfl* d = get<Dfl>(n.input(0));
    const auto perm = n.attrs.get_ints("perm", {});
    if (!d || perm.size() != 4) return fail("not a transpose of the DFL logits");
    Dfl out = *d;
    for (size_t i = 0; i < 4; ++i) {
      if (perm[i] < 0 || perm[i] > 3) return fail("perm");
      out.labels[i] = d->labels[static_cast<size_t>(perm[i])];
    }
    tracked_[n.outputs[0]] = out;
    return true;
  }

  bool softmax(const Node& n) {
    const Dfl* d = get<Dfl>(n.input(0));
    if (!d || d->softmax || d->conv) return fail("not the softmax of the DFL logits");
    const int64_t axis = norm_axis(n.attrs.get_int("axis", -1), 4);
    if (axis < 0 || axis > 3 || d->labels[static_cast<size_t>(axis)] != 'r')
      return fail("softmax over other than the bins");
    Dfl out = *d;
    out.softmax = true;
    tracked_[n.outputs[0]] = out;
    return true;
  }

  bool conv(const Node& n) {
    const Dfl* d = get<Dfl>(n.input(0));
    const Value* w = n.input(1);
    const Value* b = n.input(2);
    if (!d || !d->softmax || d->conv || d->labels[0] != 'n' || d->labels[1] != 'r')
      return fail("not a conv over the softmaxed bins");
    const auto ones = std::vector<int64_t>{1, 1};
    if (!w || !w->known() || w->known()->shape() != Shape{1, task_.bins, 1, 1} ||
        n.attrs.get_int("group", 1) != 1 || n.attrs.get_ints("strides", ones) != ones ||
        n.attrs.get_ints("dilations", ones) != ones ||
        n.attrs.get_ints("pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0} ||
        n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" ||
        !is_float(w->known()->dtype()) || (b && (!b->known() || b->known()->numel() != 1 ||
                                                  !is_float(b->known()->dtype()))))
      return fail("not a 1x1 conv of the bins to one channel");
    const Tensor wf = w->known()->cast(DType::kFloat32);
    task_.dfl_weights.assign(wf.data<float>(), wf.data<float>() + task_.bins);
    task_.dfl_bias = b ? b->known()->cast(DType::kFloat32).data<float>()[0] : 0.f;
    for (float v : task_.dfl_weights) {
      if (!std::isfinite(v)) return fail("non-finite DFL weight");
    }
    if (!std::isfinite(task_.dfl_bias)) return fail("non-finite DFL bias");
    Dfl out = *d;
    out.conv = true;
    out.labels[1] = '1';
    tracked_[n.outputs[0]] = out;
    return true;
  }

  static bool is_float(DType t) {
    return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 ||
           t == DType::kFloat64;
  }

  bool sigmoid(const Node& n) {
    const Gathered* gth = get<Gathered>(n.input(0));
    if (!gth) return fail("sigmoid of other than gathered channels");
    tracked_[n.outputs[0]] = Classes{*gth};
    return true;
  }

  // Channel k of operand v of an elementwise node with output shape ys.
  std::optional<Operand> channel(const Value* v, const Shape& ys, int64_t k) {
    if (const Decoded* d = get<Decoded>(v)) {
      const auto vs = *static_shape(v);
      if (vs.size() != 3 || vs[0] != ys[0] || vs[2] != ys[2]) return std::nullopt;
      if (d->ch.size() == 1) return d->ch[0];
      if (static_cast<int64_t>(d->ch.size()) != ys[1]) return std::nullopt;
      return d->ch[static_cast<size_t>(k)];
    }
    if (tracked_.count(v) || !v->known() || !is_float(v->known()->dtype())) return std::nullopt;
    const Tensor c = v->known()->cast(DType::kFloat32);
    const auto st = cpu::broadcast_strides(c.shape(), ys);
    if (!st || (ys[0] > 1 && (*st)[0] != 0)) return std::nullopt;
    const float* p = c.data<float>();
    const int64_t at = k * (*st)[1];
    if ((*st)[2] == 0) {
      if (!std::isfinite(p[at])) return std::nullopt;
      return Operand{Operand::Kind::kLiteral, 0, p[at]};
    }
    std::vector<float> row(static_cast<size_t>(ys[2]));
    for (int64_t a = 0; a < ys[2]; ++a) row[static_cast<size_t>(a)] = p[at + a * (*st)[2]];
    auto it = rows_.find(row);
    if (it == rows_.end()) {
      it = rows_.emplace(row, static_cast<int64_t>(rows_.size())).first;
      task_.table.insert(task_.table.end(), row.begin(), row.end());
    }
    return Operand{Operand::Kind::kTable, it->second, 0};
  }

  bool arith(const Node& n) {
    const Value* y = n.outputs.at(0);
    const Shape ys = *static_shape(y);
    if (n.inputs.size() != 2 || ys.size() != 3 || ys[0] != task_.n || ys[2] != task_.anchors ||
        task_.anchors == 0 || (!get<Decoded>(n.input(0)) && !get<Decoded>(n.input(1))))
      return fail("not arithmetic on the decoded boxes");
    const char op = n.op == "Add" ? '+' : n.op == "Sub" ? '-' : n.op == "Mul" ? '*' : '/';
    Decoded out;
    for (int64_t k = 0; k < ys[1]; ++k) {
      const auto a = channel(n.input(0), ys, k);
      const auto b = channel(n.input(1), ys, k);
      if (!a || !b) return fail("operand not a box value or a per-anchor float constant");
      task_.decode.push_back({op, *a, *b});
      out.ch.push_back({Operand::Kind::kTemp, static_cast<int64_t>(task_.decode.size() - 1), 0});
    }
    tracked_[y] = out;
    return true;
  }

  // The levels (the box and class channels of each must come from maps of one size), the output.
  bool finish(const Value* y, const Shape& ys) {
    if (!box_ || !cls_ || task_.dfl_weights.empty()) return fail("no DFL or no class scores");
    if (box_->parts.size() != cls_->parts.size() || cls_->anchors() != task_.anchors ||
        ys[2] != task_.anchors || ys[0] != task_.n)
      return fail("box and class levels differ");
    int64_t first = 0;
    for (size_t i = 0; i < box_->parts.size(); ++i) {
      const Head& b = box_->parts[i];
      const Head& c = cls_->parts[i];
      if (b.h != c.h || b.w != c.w) return fail("box and class levels differ");
      // Each level's box and class channels must lie in one head output each.
      if (b.seg.size() != 1 || c.seg.size() != 1)
        return fail("box or class channels of a level from several head outputs");
      task_.levels.push_back(
          {b.h, b.w, first, b.seg[0].input, c.seg[0].input, b.seg[0].channel, c.seg[0].channel});
      first += b.h * b.w;
    }
    task_.classes = cls_->channels;
    task_.output = operand_of_(y);
    if (!is_storage_dtype(task_.output.dtype) || task_.output.strides.size() != 3)
      return fail("output not fp32 / fp16 / bf16 of rank 3");
    tracked_[y] = Final{};
    final_ = true;
    return true;
  }

  const Graph& g_;
  const FusedGroup& grp_;
  const std::function<CudaOperand(const Value*)>& operand_of_;
  const Value* output_ = nullptr;
  std::map<const Value*, Tracked> tracked_;
  std::map<std::vector<float>, int64_t> rows_;
  std::optional<Gathered> box_, cls_;
  DetectTailTask task_;
  std::string why_;
  bool final_ = false;
};

std::string strides_str(const CudaOperand& o) {
  return fmt::format("{}:{}", short_dtype_name(o.dtype), fmt::join(o.strides, ","));
}

// exp and division to about 2 ulp of float32 (yc_exp_fast, yc_div_fast) when the head outputs or
// the output are 16-bit: their rounding is some 2^10 times that error. On an H200 the batch-128
// tail of yolov8n fp16 went from 242 to 174 us (fp16 output) with them. A float32 tail of float32
// heads keeps expf and the IEEE division.
bool fast_math(const DetectTailTask& t) {
  bool narrow = t.output.dtype != DType::kFloat32;
  for (const CudaOperand& in : t.inputs) narrow = narrow || in.dtype != DType::kFloat32;
  return narrow;
}

int64_t units(const DetectTailTask& t, int64_t chunk) {
  return 1 + (t.classes_stored ? 0 : cpu::ceil_div(t.classes, chunk));
}

// The box unit (detect_box_unit_source): the output type, the box constants, box_unit.
constexpr const char* kBoxUnit = cuh::detect_box_unit;

constexpr const char* kDetectTailKernel = cuh::detect_tail;

}  // namespace

std::string DetectTailTask::key() const {
  std::string k = fmt::format("cuda_detect_tail {}->{} n{} a{} s{} r{} c{} box{} cls@{} levels",
                              inputs.empty() ? "?" : short_dtype_name(inputs[0].dtype),
                              short_dtype_name(output.dtype), n, anchors, sides, bins, classes,
                              box_out.size(), class_offset);
  for (size_t i = 0; i < levels.size(); ++i) {
    const DetectTailLevel& l = levels[i];
    k += fmt::format("{}{}x{}:{}+{}/{}+{}", i ? "," : " ", l.h, l.w, l.box_input, l.box_channel,
                     l.cls_input, l.cls_channel);
  }
  k += " in";
  for (const CudaOperand& o : inputs) k += fmt::format(" {}", strides_str(o));
  k += " decode";
  for (size_t i = 0; i < decode.size(); ++i) {
    k += fmt::format(" t{}={}{}{}", i, operand_str(decode[i].a), decode[i].op,
                     operand_str(decode[i].b));
  }
  k += " out";
  for (const Operand& o : box_out) k += fmt::format(" {}", operand_str(o));
  return k + fmt::format(" {}{}", strides_str(output), classes_stored ? " cls-stored" : "");
}

std::optional<DetectTailTask> detect_tail_task_from_group(
    const Graph& g, const FusedGroup& grp,
    const std::function<CudaOperand(const Value*)>& operand_of, std::string* why) {
  Matcher m(g, grp, operand_of);
  auto t = m.run(why);
  if (t && !DetectTailTemplate::matches(*t)) {
    if (why) *why = "no valid config (" + t->key() + ")";
    return std::nullopt;
  }
  return t;
}

bool DetectTailTemplate::matches(const DetectTailTask& t) {
  bool ok = t.n > 0 && t.anchors > 0 && t.sides > 0 && t.bins > 0 && t.bins <= 64 &&
            t.sides * t.bins <= 256 && t.classes > 0 && !t.inputs.empty() && !t.levels.empty() &&
            static_cast<int64_t>(t.dfl_weights.size()) == t.bins && !t.box_out.empty() &&
            (t.class_offset == 0 || t.class_offset == static_cast<int64_t>(t.box_out.size())) &&
            is_storage_dtype(t.output.dtype) && t.output.strides.size() == 3 &&
            static_cast<int64_t>(t.table.size()) % t.anchors == 0 &&
            t.n * t.anchors < (int64_t{1} << 31);
  if (!ok) return false;
  for (const CudaOperand& o : t.inputs) ok = ok && is_storage_dtype(o.dtype) && o.strides.size() == 4;
  int64_t first = 0;
  const auto in_range = [&t](int i) { return i >= 0 && static_cast<size_t>(i) < t.inputs.size(); };
  for (const DetectTailLevel& l : t.levels) {
    ok = ok && l.first == first && l.h > 0 && l.w > 0 && in_range(l.box_input) &&
         in_range(l.cls_input) && l.box_channel >= 0 && l.cls_channel >= 0;
    first += l.h * l.w;
  }
  ok = ok && first == t.anchors;
  const int64_t rows = static_cast<int64_t>(t.table.size()) / t.anchors;
  const auto operand_ok = [&](const Operand& o, size_t before) {
    switch (o.kind) {
      case Operand::Kind::kDistance: return o.index >= 0 && o.index < t.sides;
      case Operand::Kind::kTemp: return o.index >= 0 && static_cast<size_t>(o.index) < before;
      case Operand::Kind::kTable: return o.index >= 0 && o.index < rows;
      case Operand::Kind::kLiteral: return std::isfinite(o.literal);
    }
    return false;
  };
  for (size_t i = 0; i < t.decode.size(); ++i) {
    const DetectTailStatement& s = t.decode[i];
    ok = ok && operand_ok(s.a, i) && operand_ok(s.b, i) &&
         (s.op == '+' || s.op == '-' || s.op == '*' || s.op == '/');
  }
  for (const Operand& o : t.box_out) ok = ok && operand_ok(o, t.decode.size());
  return ok &&
         valid(t, ScheduleConfig({{"threads", 256}, {"class_chunk", t.classes_stored ? 16 : 128}}));
}

ScheduleSpace DetectTailTemplate::space(const DetectTailTask& t) {
  ScheduleSpace s;
  s.knobs.push_back({"threads", "threads per block", {64, 128, 256, 512}});
  // Without class units (classes_stored) the chunk changes nothing: one value.
  s.knobs.push_back(
      {"class_chunk", "classes per class unit",
       t.classes_stored ? std::vector<int64_t>{16} : std::vector<int64_t>{8, 16, 32, 64, 128}});
  return s;
}

bool DetectTailTemplate::valid(const DetectTailTask& t, const ScheduleConfig& cfg) {
  if (!cfg.in_space(space(t))) return false;
  const int64_t chunk = cfg.get("class_chunk"), threads = cfg.get("threads");
  // A chunk above C's next power of two is the one above it again (but 128 always serves).
  if (!t.classes_stored && chunk > 8 && chunk / 2 >= t.classes && chunk != 128) return false;
  const int64_t blocks = cpu::ceil_div(t.n * t.anchors, threads) * units(t, chunk);
  return blocks * threads < (int64_t{1} << 31);
}

ScheduleConfig DetectTailTemplate::default_config(const DetectTailTask& t) {
  YOLOC_CHECK(matches(t), "detect-tail template does not match {}", t.key());
  for (int64_t chunk : {16, 32, 64, 128, 8}) {
    ScheduleConfig cfg({{"threads", 256}, {"class_chunk", chunk}});
    if (valid(t, cfg)) return cfg;
  }
  internal_error("no valid detect-tail config for {}", t.key());
}

std::string detect_box_unit_source(const DetectTailTask& t) {
  std::string expect;
  for (int64_t r = 0; r < t.bins; ++r) {
    expect +=
        fmt::format("    {{ const float e = @EXP@(v[{0}] - m); sum += e; acc += e * {1}; }}\n", r,
                    literal(t.dfl_weights[static_cast<size_t>(r)]));
  }
  const auto op = [](const Operand& o) -> std::string {
    switch (o.kind) {
      case Operand::Kind::kDistance: return fmt::format("d[{}]", o.index);
      case Operand::Kind::kTemp: return fmt::format("t{}", o.index);
      case Operand::Kind::kTable: return fmt::format("table[{} * A + a]", o.index);
      case Operand::Kind::kLiteral: return literal(o.literal);
    }
    return "";
  };
  std::string decode;
  for (size_t i = 0; i < t.decode.size(); ++i) {
    const DetectTailStatement& s = t.decode[i];
    decode += fmt::format("  const float t{} = {} {} {};\n", i, op(s.a), s.op, op(s.b));
  }
  for (size_t k = 0; k < t.box_out.size(); ++k) {
    const int64_t ch = t.class_offset == 0 ? t.classes + static_cast<int64_t>(k)
                                           : static_cast<int64_t>(k);
    decode += fmt::format("  yc_store(y + {} * OC, {});\n", ch, op(t.box_out[k]));
  }
  std::string body = kBoxUnit;
  const bool fast = fast_math(t);
  const std::pair<const char*, std::string> subs[] = {
      {"@TO@", cuda_storage_type(t.output.dtype)},
      {"@A@", std::to_string(t.anchors)},
      {"@S@", std::to_string(t.sides)},
      {"@R@", std::to_string(t.bins)},
      {"@ON@", std::to_string(t.output.strides[0])},
      {"@OC@", std::to_string(t.output.strides[1])},
      {"@OA@", std::to_string(t.output.strides[2])},
      {"@EXPECT@", expect},
      {"@BIAS@", literal(t.dfl_bias)},
      {"@DECODE@", decode},
      {"@DIV@", fast ? "yc_div_fast(acc, sum)" : "acc / sum"},
      {"@EXP@", fast ? "yc_exp_fast" : "yc_exp"}};
  for (const auto& [from, to] : subs) cpu::replace_all(body, from, to);
  return body;
}

CudaKernel DetectTailTemplate::emit(const DetectTailTask& t, const ScheduleConfig& cfg,
                                    const std::string& symbol) {
  YOLOC_CHECK(matches(t) && valid(t, cfg), "detect-tail config {} invalid for {}", cfg.str(),
              t.key());
  YOLOC_CHECK(cpu::is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  const int64_t threads = cfg.get("threads"), chunk = cfg.get("class_chunk");
  const int64_t tiles = cpu::ceil_div(t.n * t.anchors, threads);
  std::string params;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    params += fmt::format("const void* __restrict__ p_in{}, ", i);
  }
  params += "const float* __restrict__ p_table, void* __restrict__ p_out";

  // The level of anchor a: pointers at its pixel of the head outputs.
  std::string levels;
  for (const DetectTailLevel& l : t.levels) {
    const auto at = [&](int input, int64_t channel) {
      const CudaOperand& o = t.inputs[static_cast<size_t>(input)];
      return fmt::format(
          "static_cast<const {}*>(p_in{}) + (static_cast<yc_i64>(n) * {} + "
          "static_cast<yc_i64>(p / {}) * {} + static_cast<yc_i64>(p % {}) * {} + {})",
          cuda_storage_type(o.dtype), input, o.strides[0], l.w, o.strides[2], l.w, o.strides[3],
          channel * o.strides[1]);
    };
    levels += fmt::format(
        "  if (a < {}) {{\n"
        "    const int p = a - {};\n"
        "    if (unit == 0) {{\n"
        "      box_unit({}, {}, p_table, a, y);\n"
        "    }}{}\n"
        "    return;\n"
        "  }}\n",
        l.first + l.h * l.w, l.first, at(l.box_input, l.box_channel),
        t.inputs[static_cast<size_t>(l.box_input)].strides[1],
        t.classes_stored
            ? std::string()
            : fmt::format(" else {{\n      class_unit({}, {}, (unit - 1) * CC, y);\n    }}",
                          at(l.cls_input, l.cls_channel),
                          t.inputs[static_cast<size_t>(l.cls_input)].strides[1]));
  }
  std::string body = kDetectTailKernel;
  const std::pair<const char*, std::string> subs[] = {
      {"@SYM@", symbol},
      {"@BOX_UNIT@", detect_box_unit_source(t)},
      {"@N@", std::to_string(t.n)},
      {"@C@", std::to_string(t.classes)},
      {"@CC@", std::to_string(chunk)},
      {"@CO@", std::to_string(t.class_offset)},
      {"@THREADS@", std::to_string(threads)},
      {"@TILES@", std::to_string(tiles)},
      {"@LEVELS@", levels},
      {"@PARAMS@", params},
      {"@SIGMOID@", fast_math(t) ? "yc_act_sigmoid_fast" : "yc_act_sigmoid"}};
  for (const auto& [from, to] : subs) cpu::replace_all(body, from, to);
  CudaKernel k;
  k.symbol = symbol;
  k.source = cuda_prelude() + "// " + t.key() + " | " + cfg.str() + "\n" + body;
  k.grid = {static_cast<unsigned>(tiles * units(t, chunk)), 1, 1};
  k.block = {static_cast<unsigned>(threads), 1, 1};
  return k;
}

}  // namespace yoloc::codegen::cuda
