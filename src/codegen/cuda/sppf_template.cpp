#include "codegen/cuda/sppf_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

// The longest line (region rows or columns) a thread holds in registers.
constexpr int64_t kMaxLine = 64;
// Shared memory the default config may take (above 48 KiB the runtime opts in).
constexpr int64_t kDefaultSharedBytes = 64 * 1024;

// A window relative to its output position: KH x KW, top-left PT rows up and PL columns left.
struct Win {
  int64_t kh = 1, kw = 1, pt = 0, pl = 0;
  int64_t pb() const { return kh - 1 - pt; }
  int64_t pr() const { return kw - 1 - pl; }
  bool operator==(const Win& o) const {
    return kh == o.kh && kw == o.kw && pt == o.pt && pl == o.pl;
  }
};

// The window of a stride-1 MaxPool whose output has its input's size (pads summing to the
// window's extent minus one); nullopt for any other pool.
std::optional<Win> same_size_window(const Node& n) {
  const Value* x = n.input(0);
  if (n.op != "MaxPool" || !x || n.outputs.size() != 1 || !x->type.has_rank ||
      x->type.dims.size() != 4 || !x->type.is_static()) {
    return std::nullopt;
  }
  const auto k = n.attrs.get_ints("kernel_shape", {});
  const auto s = n.attrs.get_ints("strides", {1, 1});
  const auto p = n.attrs.get_ints("pads", {0, 0, 0, 0});
  const auto d = n.attrs.get_ints("dilations", {1, 1});
  if (k.size() != 2 || s != std::vector<int64_t>{1, 1} || d != std::vector<int64_t>{1, 1} ||
      p.size() != 4 || n.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" || k[0] < 1 ||
      k[1] < 1 || std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; }) ||
      p[0] + p[2] != k[0] - 1 || p[1] + p[3] != k[1] - 1) {
    return std::nullopt;
  }
  return Win{k[0], k[1], p[0], p[1]};
}


bool nhwc(const Value* v) { return v->layout.layout == Layout::kNHWC; }

// The spatial blocking of one axis of `size` pixels for a tile edge and the halo around it.
struct Axis {
  int64_t tile = 0;    ///< pixels a block stores
  int64_t region = 0;  ///< pixels it loads (tile + halo; the whole axis when it is one tile)
  int64_t offset = 0;  ///< region pixel of the tile's first pixel
  int64_t tiles = 0;
};

Axis axis(int64_t size, int64_t tile, int64_t before, int64_t after) {
  if (size <= tile) return {size, size, 0, 1};
  return {tile, tile + before + after, before, cpu::ceil_div(size, tile)};
}

// The blocking of a config: both axes, channels per block, the shared-memory row pitch and size.
struct Blocking {
  Axis h, w;
  int64_t cb = 0, chunks = 0;
  int64_t pitch = 0;  ///< floats from one region row to the next
  int64_t shared_bytes = 0;
  int64_t blocks = 0;
};

Blocking blocking(const SppfTask& t, int64_t tile, int64_t cb) {
  const auto halo = t.halo();
  Blocking b;
  b.h = axis(t.h, tile, halo[0], halo[1]);
  b.w = axis(t.w, tile, halo[2], halo[3]);
  b.cb = cb;
  b.chunks = cpu::ceil_div(t.c, cb);
  // A row pass has 32 / CB rows in a warp: a pitch of CB times an odd number puts them on
  // different banks (a column pass reads consecutive floats).
  b.pitch = b.w.region * cb + (b.w.region % 2 == 1 || cb >= 32 ? 0 : cb);
  b.shared_bytes = 2 * b.h.region * b.pitch * 4;
  b.blocks = t.n * b.h.tiles * b.w.tiles * b.chunks;
  return b;
}

// Elements per global access: the widest power of two up to 16 bytes that divides the channel
// count, the block's channels and every slice's stride and offset.
int64_t vector_width(const SppfTask& t, int64_t cb) {
  std::vector<int64_t> all = {t.c, cb, t.in.stride, t.in.offset};
  for (const SppfStage& s : t.stages) {
    for (const SppfStore& st : s.stores) all.insert(all.end(), {st.slice.stride, st.slice.offset});
  }
  int64_t v = 16 / static_cast<int64_t>(dtype_size(t.dtype));
  while (v > 1 && std::any_of(all.begin(), all.end(), [v](int64_t a) { return a % v != 0; })) {
    v /= 2;
  }
  return v;
}

constexpr const char* kSppfKernel = cuh::sppf;

}  // namespace

std::array<int64_t, 4> SppfTask::halo() const {
  std::array<int64_t, 4> s{0, 0, 0, 0};
  for (const SppfStage& st : stages) {
    s[0] += st.pt, s[1] += st.kh - 1 - st.pt, s[2] += st.pl, s[3] += st.kw - 1 - st.pl;
  }
  return s;
}

std::string SppfTask::key() const {
  std::string k = fmt::format("cuda_sppf {} n{} c{} h{} w{} in{}+{}", short_dtype_name(dtype), n, c,
                              h, w, in.stride, in.offset);
  for (const SppfStage& s : stages) {
    k += fmt::format(" {}x{} p{}x{}", s.kh, s.kw, s.pt, s.pl);
    for (size_t i = 0; i < s.stores.size(); ++i) {
      const SppfStore& st = s.stores[i];
      k += fmt::format("{}out{}:{}+{}", i ? "," : " ", st.output, st.slice.stride, st.slice.offset);
    }
  }
  return k;
}

std::optional<SppfTask> sppf_task_from_group(const Graph& g, const FusedGroup& grp,
                                             std::string* why) {
  const auto refuse = [&](const std::string& what) -> std::optional<SppfTask> {
    if (why) *why = what;
    return std::nullopt;
  };
  const cpu::GroupIO io = cpu::group_io(g, grp);
  if (io.nodes.empty() || io.outputs.empty()) return refuse("empty group");
  const Value* x = nullptr;
  std::map<const Value*, Win> window;  // of each pool output, over x
  std::set<const Value*> concats;      // view Concat outputs of the group
  std::set<const Value*> stored;       // pool outputs the group writes
  for (const Node* n : io.nodes) {
    if (n->op == "Concat") {
      const Value* y = n->outputs.at(0);
      const int64_t ax = n->attrs.get_int("axis", 0);
      if (!n->is_view() || (ax != 1 && ax != -3) || !y->type.has_rank || y->type.dims.size() != 4)
        return refuse(n->label() + ": not a view Concat on channels");
      concats.insert(y);
      for (const Value* in : n->inputs) {
        if (window.count(in)) stored.insert(in);
      }
      continue;
    }
    const auto win = same_size_window(*n);
    if (!win) return refuse(n->label() + ": not a stride-1 same-size MaxPool");
    const Value* in = n->input(0);
    Win base;
    if (window.count(in)) {
      base = window.at(in);
    } else if (concats.count(in) || (x && x != in)) {
      return refuse(n->label() + ": reads neither a pool of the group nor its one input");
    } else {
      x = in;
    }
    window[n->outputs[0]] =
        Win{base.kh + win->kh - 1, base.kw + win->kw - 1, base.pt + win->pt, base.pl + win->pl};
  }
  if (!x) return refuse("no MaxPool");
  if (!nhwc(x) || !is_storage_dtype(x->type.dtype)) return refuse("input not NHWC fp32/fp16/bf16");

  SppfTask t;
  t.dtype = x->type.dtype;
  const Shape xs = x->type.static_shape();
  t.n = xs[0], t.c = xs[1], t.h = xs[2], t.w = xs[3];
  t.x = x;
  const auto in = channel_slice_of(g, x);
  if (!in) return refuse("input is not a channel slice");
  t.in = *in;
  // The values each output's buffer holds: itself and, through view Concats, their inputs.
  std::vector<std::set<const Value*>> holds;
  for (const Value* o : io.outputs) {
    if (!window.count(o) && !concats.count(o)) return refuse(o->name + ": output of no pool");
    if (!nhwc(o) || o->type.dtype != t.dtype) return refuse(o->name + ": not NHWC of x's dtype");
    const auto s = channel_slice_of(g, o);
    if (!s) return refuse(o->name + ": not a channel slice");
    if (window.count(o)) stored.insert(o);
    t.outputs.push_back(o);
    t.out_slices.push_back(*s);
    std::set<const Value*> h;
    std::vector<const Value*> todo = {o};
    while (!todo.empty()) {
      const Value* v = todo.back();
      todo.pop_back();
      if (!h.insert(v).second || !concats.count(v)) continue;
      for (const Value* i : v->producer->inputs) todo.push_back(i);
    }
    holds.push_back(std::move(h));
  }
  // Stages: the stored windows by size, each holding the one before.
  std::vector<std::pair<Win, std::vector<SppfStore>>> wins;
  for (const Node* n : io.nodes) {
    const Value* v = n->outputs.at(0);
    if (!stored.count(v)) continue;
    if (!nhwc(v) || v->type.dtype != t.dtype) return refuse(v->name + ": not NHWC of x's dtype");
    const auto s = channel_slice_of(g, v);
    size_t k = 0;
    while (k < holds.size() && !holds[k].count(v)) ++k;
    if (!s || k == holds.size()) return refuse(v->name + ": not in an output's buffer");
    const Win w = window.at(v);
    auto it = std::find_if(wins.begin(), wins.end(), [&](const auto& e) { return e.first == w; });
    if (it == wins.end()) it = wins.insert(wins.end(), {w, {}});
    it->second.push_back({static_cast<int>(k), *s});
  }
  std::stable_sort(wins.begin(), wins.end(), [](const auto& a, const auto& b) {
    return a.first.kh + a.first.kw < b.first.kh + b.first.kw;
  });
  Win prev;
  for (const auto& [w, stores] : wins) {
    if (w.pt < prev.pt || w.pb() < prev.pb() || w.pl < prev.pl || w.pr() < prev.pr())
      return refuse("windows not nested");
    t.stages.push_back(
        {w.kh - prev.kh + 1, w.kw - prev.kw + 1, w.pt - prev.pt, w.pl - prev.pl, stores});
    prev = w;
  }
  if (!SppfTemplate::matches(t)) return refuse("no valid config (" + t.key() + ")");
  return t;
}

bool SppfTemplate::matches(const SppfTask& t) {
  const auto holds = [&t](const ChannelSlice& s) {
    return s.offset >= 0 && s.offset + t.c <= s.stride;
  };
  bool ok = is_storage_dtype(t.dtype) && t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 &&
            t.n * t.h * t.w < (int64_t{1} << 31) && holds(t.in) && !t.stages.empty() &&
            t.outputs.size() == t.out_slices.size();
  for (const SppfStage& s : t.stages) {
    ok = ok && s.kh >= 1 && s.kw >= 1 && s.pt >= 0 && s.pt < s.kh && s.pl >= 0 && s.pl < s.kw &&
         !s.stores.empty();
    for (const SppfStore& st : s.stores) {
      ok = ok && holds(st.slice) && st.output >= 0 &&
           static_cast<size_t>(st.output) < t.outputs.size();
    }
  }
  if (!ok) return false;
  const ScheduleSpace sp = space(t);
  for (int64_t cb : sp.find("channels")->domain) {
    for (int64_t tile : sp.find("tile")->domain) {
      if (valid(t, ScheduleConfig({{"channels", cb}, {"tile", tile}, {"threads", 64}}))) {
        return true;
      }
    }
  }
  return false;
}

ScheduleSpace SppfTemplate::space(const SppfTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"channels", "channels per block", {4, 8, 16, 32}});
  s.knobs.push_back(
      {"tile", "edge of a block's spatial tile (an axis no longer is one tile)", {8, 16, 32, 64}});
  s.knobs.push_back({"threads", "threads per block", {64, 128, 192, 256, 384, 512}});
  return s;
}

bool SppfTemplate::valid(const SppfTask& t, const ScheduleConfig& cfg) {
  if (!cfg.in_space(space(t))) return false;
  const int64_t cb = cfg.get("channels");
  if (cb > 4 && cb / 2 >= t.c) return false;
  const Blocking b = blocking(t, cfg.get("tile"), cb);
  return b.h.region <= kMaxLine && b.w.region <= kMaxLine && b.shared_bytes <= kMaxSharedBytes &&
         b.blocks <= std::numeric_limits<int32_t>::max();
}

ScheduleConfig SppfTemplate::default_config(const SppfTask& t) {
  YOLOC_CHECK(matches(t), "SPPF template does not match {}", t.key());
  const ScheduleSpace sp = space(t);
  const int64_t edge = std::max(t.h, t.w);
  std::vector<int64_t> tiles;
  for (int64_t tile : sp.find("tile")->domain) {
    if (tile >= edge) {
      tiles.push_back(tile);  // the whole image, without halo
      break;
    }
  }
  for (int64_t tile : {32, 16, 8}) {
    if (tile < edge) tiles.push_back(tile);
  }
  const auto pick = [&](int64_t tile, int64_t cb) -> std::optional<ScheduleConfig> {
    const Blocking b = blocking(t, tile, cb);
    // One row or column per thread in each pass.
    const int64_t lines = std::max(b.h.region, b.w.region) * cb;
    int64_t threads = 256;
    for (int64_t v : sp.find("threads")->domain) {
      if (v >= lines) {
        threads = std::min<int64_t>(v, 256);
        break;
      }
    }
    ScheduleConfig cfg({{"channels", cb}, {"tile", tile}, {"threads", threads}});
    if (!valid(t, cfg) || b.shared_bytes > kDefaultSharedBytes) return std::nullopt;
    return cfg;
  };
  for (int64_t tile : tiles) {
    for (int64_t cb : {8, 4}) {
      if (auto cfg = pick(tile, cb)) return *cfg;
    }
  }
  for (int64_t cb : sp.find("channels")->domain) {
    for (int64_t tile : sp.find("tile")->domain) {
      ScheduleConfig cfg({{"channels", cb}, {"tile", tile}, {"threads", 128}});
      if (valid(t, cfg)) return cfg;
    }
  }
  internal_error("no valid SPPF config for {}", t.key());
}

CudaKernel SppfTemplate::emit(const SppfTask& t, const ScheduleConfig& cfg,
                              const std::string& symbol) {
  YOLOC_CHECK(matches(t) && valid(t, cfg), "SPPF config {} invalid for {}", cfg.str(), t.key());
  YOLOC_CHECK(cpu::is_c_identifier(symbol), "kernel symbol '{}' is not a C identifier", symbol);
  const int64_t cb = cfg.get("channels"), threads = cfg.get("threads");
  const Blocking b = blocking(t, cfg.get("tile"), cb);
  std::string params = "const void* __restrict__ p_x";
  for (size_t k = 0; k < t.outputs.size(); ++k) {
    params += fmt::format(", void* __restrict__ p_out{}", k);
  }
  std::string stages;
  for (const SppfStage& s : t.stages) {
    stages += fmt::format("  stage<{}, {}, {}, {}>(a, b, cn);\n", s.kh, s.pt, s.kw, s.pl);
    for (const SppfStore& st : s.stores) {
      stages += fmt::format("  store_tile<{}, {}>(a, static_cast<T*>(p_out{}), n, h0, w0, c0);\n",
                            st.slice.stride, st.slice.offset, st.output);
    }
  }
  std::string body = kSppfKernel;
  const std::pair<const char*, std::string> subs[] = {{"@SYM@", symbol},
                                                      {"@T@", cuda_storage_type(t.dtype)},
                                                      {"@N@", std::to_string(t.n)},
                                                      {"@C@", std::to_string(t.c)},
                                                      {"@H@", std::to_string(t.h)},
                                                      {"@W@", std::to_string(t.w)},
                                                      {"@CB@", std::to_string(cb)},
                                                      {"@VL@", std::to_string(vector_width(t, cb))},
                                                      {"@THREADS@", std::to_string(threads)},
                                                      {"@TH@", std::to_string(b.h.tile)},
                                                      {"@TW@", std::to_string(b.w.tile)},
                                                      {"@RH@", std::to_string(b.h.region)},
                                                      {"@RW@", std::to_string(b.w.region)},
                                                      {"@RP@", std::to_string(b.pitch)},
                                                      {"@OFF_H@", std::to_string(b.h.offset)},
                                                      {"@OFF_W@", std::to_string(b.w.offset)},
                                                      {"@TILES_H@", std::to_string(b.h.tiles)},
                                                      {"@TILES_W@", std::to_string(b.w.tiles)},
                                                      {"@CHUNKS@", std::to_string(b.chunks)},
                                                      {"@IS@", std::to_string(t.in.stride)},
                                                      {"@IO@", std::to_string(t.in.offset)},
                                                      {"@PARAMS@", params},
                                                      {"@STAGES@", stages}};
  for (const auto& [from, to] : subs) cpu::replace_all(body, from, to);
  CudaKernel k;
  k.symbol = symbol;
  k.source = cuda_prelude() + "// " + t.key() + " | " + cfg.str() + "\n" + body;
  k.grid = {static_cast<unsigned>(b.blocks), 1, 1};
  k.block = {static_cast<unsigned>(threads), 1, 1};
  k.shared_bytes = static_cast<unsigned>(b.shared_bytes);
  return k;
}

}  // namespace yoloc::codegen::cuda
