#include "codegen/cuda/upsample_template.h"

#include <fmt/format.h>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/conv_upsample.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxUpsampleFactor = 8;

int64_t upsample_pieces(const UpsampleTask& t) { return t.n * t.h * t.w * (t.c / t.vec()); }

const char* const kUpsampleBody = cuh::upsample;

}  // namespace

int64_t UpsampleTask::vec() const { return 16 / static_cast<int64_t>(dtype_size(dtype)); }

std::string UpsampleTask::key() const {
  return fmt::format("cuda_upsample {} n{} c{} h{} w{} x{}x{} in{}+{} out{}+{}",
                     short_dtype_name(dtype), n, c, h, w, sh, sw, in.stride, in.offset, out.stride,
                     out.offset);
}

std::optional<UpsampleTask> upsample_task_from_group(const Graph& g, const FusedGroup& grp,
                                                     std::string* why) {
  const auto refuse = [&](const std::string& what) -> std::optional<UpsampleTask> {
    if (why) *why = what;
    return std::nullopt;
  };
  const cpu::GroupIO io = cpu::group_io(g, grp);
  if (io.nodes.size() != 1 || io.outputs.size() != 1) return refuse("not one node");
  const Node& r = *io.nodes[0];
  const auto f = nearest_factors(r);
  if (!f) return refuse(r.label() + ": not a nearest NHWC Resize by integer factors");
  UpsampleTask t;
  t.x = r.input(0);
  t.y = r.outputs[0];
  t.dtype = t.x->type.dtype;
  const Shape xs = t.x->type.static_shape();
  t.n = xs[0], t.c = xs[1], t.h = xs[2], t.w = xs[3];
  t.sh = f->first;
  t.sw = f->second;
  const auto in = channel_slice_of(g, t.x), out = channel_slice_of(g, t.y);
  if (!in || !out) return refuse(r.label() + ": input or output not a channel slice");
  t.in = *in;
  t.out = *out;
  if (!UpsampleTemplate::matches(t)) return refuse(r.label() + ": not in 16-byte pieces");
  return t;
}

bool UpsampleTemplate::matches(const UpsampleTask& t) {
  if (!is_storage_dtype(t.dtype) || t.n <= 0 || t.c <= 0 || t.h <= 0 || t.w <= 0) return false;
  const int64_t v = t.vec();
  const auto fits = [&](const ChannelSlice& s) {
    return s.offset >= 0 && s.offset + t.c <= s.stride && s.stride % v == 0 && s.offset % v == 0;
  };
  return t.sh >= 1 && t.sh <= kMaxUpsampleFactor && t.sw >= 1 && t.sw <= kMaxUpsampleFactor &&
         t.c % v == 0 && fits(t.in) && fits(t.out) && upsample_pieces(t) < (int64_t{1} << 31);
}

ScheduleSpace UpsampleTemplate::space(const UpsampleTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"threads", "threads per block", {64, 128, 256, 512}});
  s.knobs.push_back({"px", "16-byte input pieces per thread", {1, 2, 4}});
  return s;
}

bool UpsampleTemplate::valid(const UpsampleTask& t, const ScheduleConfig& cfg) {
  if (!cfg.in_space(space(t))) return false;
  const int64_t per_block = cfg.get("threads") * cfg.get("px");
  return cpu::ceil_div(upsample_pieces(t), per_block) < (int64_t{1} << 31);
}

ScheduleConfig UpsampleTemplate::default_config(const UpsampleTask& t) {
  YOLOC_CHECK(matches(t), "upsample template does not match {}", t.key());
  return ScheduleConfig({{"threads", 256}, {"px", 1}});
}

CudaKernel UpsampleTemplate::emit(const UpsampleTask& t, const ScheduleConfig& cfg,
                                  const std::string& symbol) {
  YOLOC_CHECK(matches(t) && valid(t, cfg), "upsample config {} is not valid for {}", cfg.str(),
              t.key());
  const int64_t threads = cfg.get("threads"), px = cfg.get("px");
  std::string body = kUpsampleBody;
  const std::pair<const char*, std::string> subs[] = {{"@SYM@", symbol},
                                                      {"@N@", std::to_string(t.n)},
                                                      {"@C@", std::to_string(t.c)},
                                                      {"@H@", std::to_string(t.h)},
                                                      {"@W@", std::to_string(t.w)},
                                                      {"@SH@", std::to_string(t.sh)},
                                                      {"@SW@", std::to_string(t.sw)},
                                                      {"@VEC@", std::to_string(t.vec())},
                                                      {"@THREADS@", std::to_string(threads)},
                                                      {"@PX@", std::to_string(px)},
                                                      {"@IS@", std::to_string(t.in.stride)},
                                                      {"@IO@", std::to_string(t.in.offset)},
                                                      {"@OS@", std::to_string(t.out.stride)},
                                                      {"@OO@", std::to_string(t.out.offset)}};
  for (const auto& [from, to] : subs) cpu::replace_all(body, from, to);
  CudaKernel k;
  k.symbol = symbol;
  k.source = cuda_prelude() + "// " + t.key() + " | " + cfg.str() + "\n" + body;
  k.grid = {static_cast<unsigned>(cpu::ceil_div(upsample_pieces(t), threads * px)), 1, 1};
  k.block = {static_cast<unsigned>(threads), 1, 1};
  return k;
}

}  // namespace yoloc::codegen::cuda
