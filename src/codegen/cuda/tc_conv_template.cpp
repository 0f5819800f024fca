#include "codegen/cuda/tc_conv_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/detect_head_fusion.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxWarps = 8;
constexpr int64_t kMaxAccumulators = 128;  // fp32 registers per thread for the warp tile
constexpr int64_t kMaxAccumulatorsWgmma = 144;  // wg=2: no A or B fragments in registers
constexpr int64_t kPad = 8;                // halves of padding per shared-memory row
constexpr int64_t kTargetBlocks = 128;     // about one wave on an A100 / H100
// Split-K by default (sm_90): while the blocks stay within two per multiprocessor of an H100 /
// H200 (132), which the small tiles of small layers allow, and each split keeps this many steps.
constexpr int64_t kSplitTargetBlocks = 2 * 132;
constexpr int64_t kMinSplitSteps = 8;
constexpr int kClusterSm = 90;  // thread-block clusters
constexpr int kWgmmaSm = 90;    // warpgroup MMA (wgmma.mma_async, sm_90a)

int64_t gemm_depth8(const CudaConvTask& t) {
  return cpu::ceil_div(t.conv.kh * t.conv.kw * t.conv.c, 8) * 8;
}

// The block tiles of output channels: the powers of two from 16 to 256 and, for K not a
// multiple of 64 (the 80 class channels and the 144 = 64 + 80 merged box and class channels of
// the YOLOv8 heads, the 48 and 96 of C2f blocks), the other multiples of 16 up to 256 that divide
// K: 144 channels in tiles of 64 compute 192 (25 % of the tensor-core work wasted), in tiles of
// 48 or 144 none. In increasing order (the tuner's neighbours).
std::vector<int64_t> channel_tiles(int64_t k) {
  std::vector<int64_t> out;
  for (int64_t v = 16; v <= 256; v += 16) {
    const bool pow2 = (v & (v - 1)) == 0;
    if (pow2 || (k % 64 != 0 && k % v == 0)) out.push_back(v);
  }
  return out;
}

// The warp tiles of output channels: 16, 32 and 64, and 48 or 80 where a block tile is a
// multiple of it and not of 32 (144 = 3 x 48 with at most 8 warps; the heads' 80 class channels
// in one warp tile, 10 n8-tiles, so that a block of them need not be 16 channels wide, 5 warps
// across, and at most 64 pixels tall). For wgmma with A from shared memory (wg=2) also 128 and
// 256 and the block tiles between 80 and 256 that are not multiples of 32 (144): one instruction
// as wide as the block tile.
std::vector<int64_t> warp_channel_tiles(int64_t k) {
  std::set<int64_t> out = {16, 32, 64, 128, 256};
  for (int64_t v : channel_tiles(k)) {
    for (int64_t w : {48, 80})
      if (v % w == 0 && v % 32 != 0) out.insert(w);
    if (v > 80 && v % 32 != 0) out.insert(v);
  }
  return {out.begin(), out.end()};
}

// The halves of a halo tile of bm pixels in rows of tw (the kernel's HALO_ELEMS); 0 for tw = 0.
// wg=2 stores it in swizzled slabs without padding (rows of each slab a multiple of 8, the whole
// a multiple of 1024 bytes).
int64_t halo_elems(const CudaConvTask& task, int64_t bm, int64_t tw, bool wg2) {
  if (tw == 0) return 0;
  const ConvTask& t = task.conv;
  const int64_t th = bm / tw, hh = (th - 1) * t.sh + (t.kh - 1) * t.dh + 1;
  const int64_t hwd = (tw - 1) * t.sw + (t.kw - 1) * t.dw + 1;
  const int64_t pixels = hh * cpu::ceil_div(hwd, t.sw) * t.sw;
  return wg2 ? cpu::ceil_div(cpu::ceil_div(pixels, 8) * 8 * t.c, 512) * 512 : pixels * (t.c + 8);
}

// The pipeline's ring (of B tiles only after a halo tile of `halo` halves); with split-K at least
// the fp32 tile of partial sums that reuses it. (wg=2 uses unpadded rows, a fifth less for
// 32-deep steps: allocating only those was timed on an H200 no faster, 50 configs at a median
// ratio of 0.996, so its blocks keep the same allocation as the others.)
int64_t shared_bytes(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int64_t splitk,
                     int64_t halo = 0) {
  const int64_t ring =
      halo > 0 ? halo * 2 + stages * bn * (bk + kPad) * 2 : stages * (bm + bn) * (bk + kPad) * 2;
  return splitk > 1 ? std::max(ring, bm * bn * 4) : ring;
}

// The fp32 output tile the staged epilogue (epi=1) writes over the pipeline ring: rows of BN + 8
// floats, so that the float pairs of a fragment store fall on distinct banks (8 rows of a tile are
// 8 banks apart).
int64_t staged_bytes(int64_t bm, int64_t bn) { return bm * (bn + 8) * 4; }

// Whether epi=1 stages the output for the task: NHWC outputs only (an NCHW output keeps the
// fragment stores, which write runs of 8 pixels of a channel plane already). A b2b pair's first
// stage has no output; epi=1 stages its second stage's instead (b2b_staged).
bool staged_output(const CudaConvTask& t, const ScheduleConfig& cfg) {
  return cfg.get("epi") == 1 && !t.out_nchw && !t.b2b;
}

// Whether epi=1 stages a b2b pair's second-stage output (kB2bFunctions' B2B_EPI), NHWC or NCHW:
// when the second stage is one column tile (its tile then goes over the intermediate, which its
// GEMM has read) and stores 16-bit values.
bool b2b_staged(const CudaConvTask& t, const ScheduleConfig& cfg) {
  return t.b2b && cfg.get("epi") == 1;
}
bool b2b_staging_fits(const CudaConvTask& t, int64_t bm, int64_t bn, int64_t bk, int64_t stages,
                      int64_t halo, bool wg2) {
  if (t.b2b->k > bn || dtype_size(t.b2b->out_dtype) != 2) return false;
  // NCHW: channel rows of bm + 8 halves over the intermediate's place, the kernel's W2_AT halves:
  // the ring as the kernel counts it (wg=2 rows unpadded), or the intermediate if larger.
  const int64_t row = wg2 ? bk : bk + kPad;
  const int64_t ring = halo > 0 ? halo + stages * bn * row : stages * (bm + bn) * row;
  return !t.b2b->out_nchw || bn * (bm + kPad) <= std::max(ring, bm * (bn + kPad));
}

// The kernel after the common declarations of conv_common_source (in the same namespace), composed
// of the pieces in kernels/ (see the header for the scheme; their comments say why): the tile
// configuration, the mma.sync warp steps, the im2col and halo-tile copies, the weight tiles and
// accumulators, the wgmma steps, the split-K reduction, the epilogue, and the kernel itself (its
// persistent walk and pipelined main loop).
const std::string& tensor_core_kernel() {
  static const std::string source = std::string(cuh::tc_conv_config) + cuh::tc_conv_mma_sync +
                                    cuh::tc_conv_im2col + cuh::tc_conv_halo + cuh::tc_conv_weights +
                                    cuh::tc_conv_wgmma + cuh::tc_conv_splitk +
                                    cuh::tc_conv_epilogue + cuh::tc_conv_kernel;
  return source;
}

// Back-to-back (CudaConvTask::b2b): the second stage, a 1x1 conv of this block's complete tile of
// the first stage's output (N1P <= BN: one column of tiles), after the second stage's own conv
// declarations (namespace s2, the epilogue). See the header.
constexpr const char* kB2bFunctions = cuh::tc_conv_b2b;

}  // namespace

namespace {

// A task the template takes (matches() less the b2b pair's need of a valid config).
bool takes(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  const bool sizes = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.k > 0 && t.oh > 0 && t.ow > 0 &&
                     t.kh > 0 && t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 &&
                     t.ph >= 0 && t.pw >= 0;
  const bool in16 = task.dtype == DType::kFloat16 || task.dtype == DType::kBFloat16;
  const auto out_ok = [](DType d) {
    return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
  };
  // Pixel and depth indices are 32-bit in the kernel.
  const bool fits = t.n * t.oh * t.ow < (int64_t{1} << 31) && gemm_depth8(task) < (1 << 30) &&
                    t.n * t.h * t.w < (int64_t{1} << 31);
  // An NCHW image is gathered as float32 only (the direct template takes the narrow ones).
  const bool image_ok = !task.in_nchw || task.image_dtype == DType::kFloat32;
  if (!(sizes && t.groups == 1 && in16 && image_ok && out_ok(task.out_dtype) &&
        task.slices_valid() && fits))
    return false;
  // The detect-head fusions: class scores, boxes (detect_head_fusion.h).
  if (!detect_fusion_fits(task)) return false;
  // An upsampled input: a 1x1 stride-1 conv of an NHWC input copied in 16-byte pieces, whose
  // upsampled channels and their source's slice are 16-byte aligned too; no b2b pair.
  if (const auto& u = task.up_in) {
    const bool vec = task.in.stride % 8 == 0 && task.in.offset % 8 == 0 && t.c % 8 == 0;
    if (task.b2b || task.in_nchw || !vec || t.kh != 1 || t.kw != 1 || t.sh != 1 || t.sw != 1 ||
        t.ph != 0 || t.pw != 0 || u->c0 % 8 != 0 || u->c % 8 != 0 || u->from.stride % 8 != 0 ||
        u->from.offset % 8 != 0)
      return false;
  }
  if (!task.b2b) return true;
  // The intermediate is the second GEMM's A operand: the activation dtype, kept in shared memory.
  const B2bStage& b = *task.b2b;
  return task.out_dtype == task.dtype && !task.out_nchw && !t.residual && b.k > 0 &&
         out_ok(b.out_dtype) && b.w.numel() == b.k * t.k && b.bias.numel() == b.k;
}

// A b2b pair's bytes of shared memory: the ring after a halo tile of `halo` halves (or the
// intermediate tile over it), then the second weights, their depth padded to 16 and their
// channels to column tiles of bn (kB2bFunctions).
int64_t b2b_shared_bytes(const CudaConvTask& t, int64_t bm, int64_t bn, int64_t bk, int64_t stages,
                         int64_t halo) {
  const int64_t n1p = cpu::ceil_div(t.conv.k, 16) * 16, k2p = cpu::ceil_div(t.b2b->k, bn) * bn;
  return std::max(shared_bytes(bm, bn, bk, stages, 1, halo), bm * (bn + kPad) * 2) +
         k2p * (n1p + kPad) * 2;
}

// The teams of warps of a block: two for persistent blocks of pers=2, else one.
int64_t teams(const ScheduleConfig& cfg) { return cfg.get("pers") == 2 ? 2 : 1; }

// Persistent blocks (pers=1, 2): two halo buffers of `halo` halves (one team's two, or one for
// each of two teams), the weight tiles of every depth step (rows of bk halves, as wg=2 stores
// them), and the staged output tile (epi=1, one team) after them.
int64_t persistent_shared_bytes(const CudaConvTask& t, int64_t bm, int64_t bn, int64_t bk,
                                int64_t halo, bool staged) {
  const int64_t steps = cpu::ceil_div(gemm_depth8(t), bk);
  return 2 * halo * 2 + steps * bn * bk * 2 + (staged ? staged_bytes(bm, bn) : 0);
}

int64_t kernel_shared_bytes(const CudaConvTask& t, const ScheduleConfig& cfg) {
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t stages = cfg.get("stages");
  const int64_t halo = halo_elems(t, bm, cfg.get("halo"), cfg.get("wg") == 2);
  if (cfg.get("pers") > 0)
    return persistent_shared_bytes(t, bm, bn, bk, halo, staged_output(t, cfg));
  return t.b2b ? b2b_shared_bytes(t, bm, bn, bk, stages, halo)
               : shared_bytes(bm, bn, bk, stages, cfg.get("splitk"), halo);
}

// valid() less matches().
bool fits(const CudaConvTask& t, const ScheduleConfig& cfg) {
  if (!cfg.in_space(TensorCoreConvTemplate::space(t))) return false;
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t wm = cfg.get("wm"), wn = cfg.get("wn");
  const int64_t splitk = cfg.get("splitk");
  if (bm % wm != 0 || bn % wn != 0) return false;
  // A b2b block holds all the first stage's channels, in one block (no split), and finishes its
  // tile through the second stage (epi=1: its output staged, where that fits).
  if (t.b2b && (bn < cpu::ceil_div(t.conv.k, 16) * 16 || splitk != 1)) return false;
  // Boxes are decoded from the staged tile only (each pixel's logits in shared memory).
  if (t.boxes && !b2b_staged(t, cfg)) return false;
  if (b2b_staged(t, cfg) &&
      !b2b_staging_fits(t, bm, bn, bk, cfg.get("stages"),
                        halo_elems(t, bm, cfg.get("halo"), cfg.get("wg") == 2), cfg.get("wg") == 2))
    return false;
  // Split-K needs clusters, and a depth step for every split.
  if (splitk > 1 && (t.sm < kClusterSm || cpu::ceil_div(gemm_depth8(t), bk) < splitk)) return false;
  const int64_t warps = (bm / wm) * (bn / wn);
  // l1 changes only the 16-byte copies of the input (the kernel's VEC): elsewhere it would be the
  // same kernel measured twice.
  const bool vec_in =
      !t.in_nchw && t.conv.c % 8 == 0 && t.in.stride % 8 == 0 && t.in.offset % 8 == 0;
  if (cfg.get("l1") == 1 && !vec_in) return false;
  // Halo tiles: 16-byte copies of whole pixels, 16-deep slices within one tap, one block a tile,
  // and their copies are not the im2col rows that l1 is about.
  const int64_t halo = cfg.get("halo");
  if (halo > 0 &&
      (!vec_in || t.conv.c % 16 != 0 || bm % halo != 0 || splitk != 1 || cfg.get("l1") != 0))
    return false;
  // A split tile's fragments are finished by the blocks that own them (splitk_owns), not staged.
  if (splitk > 1 && staged_output(t, cfg)) return false;
  // Warpgroup MMA: sm_90 only (sm_90a code; later GPUs have no wgmma), whole warpgroups of one
  // column of warps, no split-K. A b2b pair's first stage may be wg=2 (its second stage stays
  // mma.sync, on the accumulators' rows), not wg=1 (slower everywhere it was measured).
  const int64_t wg = cfg.get("wg");
  if (wg != 0 && (t.sm != kWgmmaSm || (wg == 1 && t.b2b) || splitk != 1 || bm % (4 * wm) != 0))
    return false;
  // A from shared memory too: im2col rows, or halo tiles 8 pixels wide (an m-tile is then 8
  // output rows of 8 pixels, which one descriptor addresses at every tap), a ring of 3+ stages
  // (one for the copies, one for the wgmmas in flight), and depth steps of at most 64 (rows of up
  // to 128 bytes, the widest swizzle). Warp tiles wider than 80 channels are for it only (one
  // wgmma instruction; no B fragments in registers), and so are 144 accumulators a thread (two
  // m-tiles of the 144-channel heads).
  if (wg == 2 ? (halo != 0 && halo != 8) || cfg.get("stages") < 3 || bk > 64 : wn > 80)
    return false;
  // Persistent blocks: wg=2 on halo tiles, no b2b pair; two teams with fragment epilogues.
  // (They use no ring: "stages" changes nothing, and is left free so that `tune --sweep pers`
  // takes a best config of any depth.)
  const int64_t pers = cfg.get("pers");
  if (pers > 0 && (wg != 2 || halo != 8 || t.b2b || (pers == 2 && staged_output(t, cfg))))
    return false;
  const int64_t threads = warps * 32 * teams(cfg);
  const int64_t max_acc = wg == 2 ? kMaxAccumulatorsWgmma : kMaxAccumulators;
  const int64_t acc = wm * wn / 32, shared = kernel_shared_bytes(t, cfg);
  if (staged_output(t, cfg)) {
    // The staged tile must fit in the ring, and the output and residual slices must keep 16-byte
    // pieces aligned (the K tail's last channels fall back to pairs inside epilogue_vec).
    const auto vec = static_cast<int64_t>(16 / dtype_size(t.out_dtype));
    const auto aligned = [&](const ChannelSlice& s) {
      return s.stride % vec == 0 && s.offset % vec == 0;
    };
    if (staged_bytes(bm, bn) > shared || !aligned(t.out) || (t.conv.residual && !aligned(t.res)))
      return false;
  }
  // ptxas caps a thread's registers at 64 Ki / (minb x threads) (minb 1 without a bound; 255 at
  // most): it must leave the accumulators and 32 more (a wgmma needs all its accumulators in
  // registers at once, and ptxas refuses below that: "Insufficient registers"). Two teams of 8
  // warps leave 128.
  const int64_t minb = cfg.get("minb");
  if (65536 / (std::max<int64_t>(minb, 1) * threads) < acc + 32) return false;
  // A b2b pair keeps 99 KiB: its larger forms (second stages of 256 channels, 128 KiB of second
  // weights) would be new pairs, not yet run on a GPU.
  const int64_t max_shared = t.b2b ? kMaxSharedBytes : max_shared_bytes(t.sm);
  return warps <= kMaxWarps && acc <= max_acc && shared <= max_shared;
}

// The b2b pair's heuristic config: the narrowest tile of channels that holds the first stage's,
// pixels as for a lone conv (a hundred blocks or so), then the first of the warp tiles, depth
// steps and stages (largest first) that fits; nullopt when none does (the pair is not fused).
std::optional<ScheduleConfig> b2b_default(const CudaConvTask& t) {
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow;
  int64_t bn = 0;
  const ScheduleSpace space = TensorCoreConvTemplate::space(t);
  for (int64_t v : space.knobs[1].domain) {
    if (v >= cpu::ceil_div(t.conv.k, 16) * 16) {
      bn = v;
      break;
    }
  }
  if (bn == 0) return std::nullopt;
  int64_t bm0 = 128;
  while (cpu::ceil_div(m, bm0) < kTargetBlocks && bm0 > 32) bm0 /= 2;
  const int64_t depth = gemm_depth8(t);
  for (int64_t bm = bm0; bm >= 32; bm /= 2)
    for (int64_t stages : {3, 2})
      for (int64_t bk : {depth <= 16 ? 16 : 32, 16})
        for (int64_t wn : {32, 16, 64})
          for (int64_t wm : {64, 32, 16}) {
            const ScheduleConfig cfg({{"bm", bm},
                                      {"bn", bn},
                                      {"bk", bk},
                                      {"wm", std::min(wm, bm)},
                                      {"wn", wn},
                                      {"stages", stages},
                                      {"splitk", 1},
                                      {"l1", 0},
                                      {"epi", t.boxes ? 1 : 0},
                                      {"halo", 0},
                                      {"wg", 0},
                                      {"minb", 0},
                                      {"pers", 0}});
            if (fits(t, cfg)) return cfg;
          }
  return std::nullopt;
}

}  // namespace

bool TensorCoreConvTemplate::matches(const CudaConvTask& task) {
  return takes(task) && (!task.b2b || b2b_default(task).has_value());
}

ScheduleSpace TensorCoreConvTemplate::space(const CudaConvTask& t) {
  ScheduleSpace s;
  s.knobs.push_back({"bm", "output pixels per block tile", {32, 64, 128, 256}});
  s.knobs.push_back({"bn", "output channels per block tile", channel_tiles(t.conv.k)});
  s.knobs.push_back({"bk", "GEMM depth per pipeline step", {16, 32, 64, 128}});
  s.knobs.push_back({"wm", "output pixels per warp tile", {16, 32, 64}});
  s.knobs.push_back({"wn", "output channels per warp tile", warp_channel_tiles(t.conv.k)});
  s.knobs.push_back({"stages", "shared-memory pipeline depth", {2, 3, 4, 5, 6}});
  // Records written before split-K lack it: they meant one block per tile.
  s.knobs.push_back(
      {"splitk", "blocks of a cluster sharing a tile's depth steps (sm_90)", {1, 2, 4, 8}, 1});
  s.knobs.push_back({"l1", "input tiles copied through L1 (cp.async.ca), else L2 only", {0, 1}, 0});
  s.knobs.push_back({"epi",
                     "output tile staged in shared memory for 16-byte stores (NHWC; a b2b pair's "
                     "second stage, NHWC or NCHW)",
                     {0, 1},
                     0});
  s.knobs.push_back({"halo",
                     "0: im2col rows through the ring; else a tile of bm/halo x halo pixels whose "
                     "input window is copied to shared memory once",
                     {0, 8, 16, 32},
                     0});
  s.knobs.push_back({"wg",
                     "warpgroup MMA (wgmma, sm_90a), 1: the weights read from shared memory, "
                     "the pixels from registers; 2: both from shared memory, pipelined; "
                     "0: mma.sync",
                     {0, 1, 2},
                     0});
  s.knobs.push_back({"minb",
                     "blocks per multiprocessor the compiler must leave registers for "
                     "(__launch_bounds__'s second argument); 0: no bound",
                     {0, 2, 3, 4},
                     0});
  s.knobs.push_back({"pers",
                     "persistent blocks (wg=2, halo=8): the weights of the block's channels stay "
                     "in shared memory and each team of warps computes tile after tile, the grid "
                     "capped at launch at the blocks the GPU holds at once; 1: one team, 2: two "
                     "(one's epilogue overlaps the other's wgmmas); 0: a block a tile",
                     {0, 1, 2},
                     0});
  return s;
}

bool TensorCoreConvTemplate::valid(const CudaConvTask& t, const ScheduleConfig& cfg) {
  return takes(t) && fits(t, cfg);
}

ScheduleConfig TensorCoreConvTemplate::default_config(const CudaConvTask& t) {
  YOLOC_CHECK(matches(t), "tensor-core conv template does not match {}", t.key());
  if (t.b2b) return *b2b_default(t);
  const int64_t m = t.conv.n * t.conv.oh * t.conv.ow, k = t.conv.k;
  int64_t bn = k <= 16 ? 16 : k <= 32 ? 32 : k <= 64 ? 64 : 128;
  int64_t bm = 128;
  const auto blocks = [&] { return cpu::ceil_div(m, bm) * cpu::ceil_div(k, bn); };
  // Smaller tiles for small layers, so that more multiprocessors get work: pixels first (the
  // weights tile is reused across them), channels down to 32.
  while (blocks() < kTargetBlocks && (bm > 32 || bn > 32)) {
    if (bm > 32) {
      bm /= 2;
    } else {
      bn /= 2;
    }
  }
  const int64_t wn = std::min<int64_t>(bn, 32);
  // Four warps, or eight for the widest tiles (64 x 32 accumulators per warp at most).
  int64_t wm = std::min<int64_t>(bm, 64);
  while ((bm / wm) * (bn / wn) < 4 && wm > 16) wm /= 2;
  const int64_t depth = gemm_depth8(t);
  const int64_t bk = depth <= 16 ? 16 : 32;
  const int64_t steps = cpu::ceil_div(depth, bk);
  const int64_t stages = steps >= 3 ? 3 : 2;
  // Split-K where the tiles are few and deep (the 20x20 and 40x40 layers of a batch-1 network:
  // tens of blocks, each running tens of dependent steps).
  int64_t splitk = 1;
  if (t.sm >= kClusterSm) {
    while (splitk < 8 && blocks() * splitk * 2 <= kSplitTargetBlocks &&
           steps / (splitk * 2) >= kMinSplitSteps) {
      splitk *= 2;
    }
  }
  // l1 and epi off until measured on GPUs.
  ScheduleConfig cfg({{"bm", bm},
                      {"bn", bn},
                      {"bk", bk},
                      {"wm", wm},
                      {"wn", wn},
                      {"stages", stages},
                      {"splitk", splitk},
                      {"l1", 0},
                      {"epi", 0},
                      {"halo", 0},
                      {"wg", 0},
                      {"minb", 0},
                      {"pers", 0}});
  YOLOC_CHECK(valid(t, cfg), "default tensor-core conv config {} invalid for {}", cfg.str(),
              t.key());
  return cfg;
}

CudaKernel TensorCoreConvTemplate::emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                                        const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "tensor-core conv config {} invalid for {}", cfg.str(), t.key());
  const int64_t bm = cfg.get("bm"), bn = cfg.get("bn"), bk = cfg.get("bk");
  const int64_t wm = cfg.get("wm"), wn = cfg.get("wn"), stages = cfg.get("stages");
  const int64_t splitk = cfg.get("splitk");
  const int64_t wg = cfg.get("wg");
  const bool bf16 = t.dtype == DType::kBFloat16;
  const char* act1 = cuda_act_function(t.conv.act, t.out_dtype);
  // wgmma: the instruction for this warp tile's N (outside the kernel's namespace), and the
  // marker that has nvrtc_compile build the kernel for sm_90a.
  const std::string wgmma =
      wg ? "}  // namespace @SYM@_ns\n#define YC_ARCH_SPECIFIC 1\n"
           "#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
           "#error \"warpgroup MMA (wg) needs sm_90a\"\n#endif\n" +
               wgmma_source(static_cast<int>(wn), bf16) + "namespace @SYM@_ns {\n"
         : "";
  // Back-to-back: the second stage's declarations and functions, its weights loaded with the
  // first pipeline stage, and its tail in place of the epilogue.
  CudaKernel k = conv_kernel(
      t, symbol, "", cfg.str(), tensor_core_kernel(),
      {{"@WGMMA_SOURCE@", wgmma},
       {"@WG@", std::to_string(wg)},
       {"@BF16@", bf16 ? "1" : "0"},
       {"@B2B_FUNCTIONS@",
        t.b2b ? "namespace s2 {\n" + conv_common_source(t.second_stage()) + "}  // namespace s2\n" +
                    fused_boxes_declarations(t) + kB2bFunctions
              : ""},
       // ---- The b2b kernel parameters, after the common ones of conv_task.h (extra parameters
       // of other fused forms go before these: the list is x, w, bias, res, y, up, [uin], w2,
       // bias2; tasks.cpp appends their arguments in the same order).
       {"@B2B_PARAMS@",
        t.b2b ? std::string(",\n          const void* w2_, const float* __restrict__ bias2") +
                    fused_boxes_param(t)
              : ""},
       // ---- An upsampled input's source (CudaConvTask::up_in), right after the common ones.
       {"@UPIN_PARAMS@", t.up_in ? ",\n          const void* uin_" : ""},
       {"@UPIN_DECL@", t.up_in
                           ? "const yc_u16* __restrict__ uin = static_cast<const yc_u16*>(uin_);"
                           : "const yc_u16* uin = nullptr;"},
       {"@UPIN@", t.up_in ? "1" : "0"},
       {"@UI0@", std::to_string(t.up_in ? t.up_in->c0 : 0)},
       {"@UIC@", std::to_string(t.up_in ? t.up_in->c : 0)},
       {"@UFH@", std::to_string(t.up_in ? t.up_in->fh : 1)},
       {"@UFW@", std::to_string(t.up_in ? t.up_in->fw : 1)},
       {"@UIS@", std::to_string(t.up_in ? t.up_in->from.stride : 0)},
       {"@UIO@", std::to_string(t.up_in ? t.up_in->from.offset : 0)},
       {"@B2B_LOAD@",
        t.b2b ? "  b2b_load_w2(yc_smem + W2_AT, static_cast<const yc_u16*>(w2_), tid);" : ""},
       {"@B2B_TAIL@", t.b2b ? fmt::format("  b2b_tail(acc, bias, yc_smem + W2_AT, yc_smem, bias2, "
                                          "static_cast<s2::OutT*>(y_), {}, tile, lane, wrow0, "
                                          "warp_n);\n  return;",
                                          fused_boxes_table(t))
                            : ""},
       {"@ACT1@", act1},
       {"@BM@", std::to_string(bm)},
       {"@BN@", std::to_string(bn)},
       {"@BK@", std::to_string(bk)},
       {"@WM@", std::to_string(wm)},
       {"@WN@", std::to_string(wn)},
       {"@STAGES@", std::to_string(stages)},
       {"@SPLITK@", std::to_string(splitk)},
       {"@SPLITK_ARCH_CHECK@", splitk > 1
                                   ? "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n"
                                     "#error \"split-K (thread-block clusters) needs sm_90\"\n"
                                     "#endif\n"
                                   : ""},
       {"@CLUSTER_DIMS@", splitk > 1 ? fmt::format("YC_CLUSTER_DIMS(1, 1, {})", splitk) : ""},
       {"@LAUNCH_BOUNDS@",
        cfg.get("minb") > 0
            ? fmt::format("YC_LAUNCH_BOUNDS_MIN({}_ns::THREADS, {})", symbol, cfg.get("minb"))
            : fmt::format("YC_LAUNCH_BOUNDS({}_ns::THREADS)", symbol)},
       {"@L1@", std::to_string(cfg.get("l1"))},
       {"@EPI@", staged_output(t, cfg) ? "1" : "0"},
       {"@B2B_EPI@", b2b_staged(t, cfg) ? "1" : "0"},
       {"@B2B_BOXES@", fused_boxes_store(t)},
       {"@BOX_BASE@", std::to_string(t.boxes ? t.boxes->base : 0)},
       {"@MMA@", t.dtype == DType::kBFloat16 ? "yc_mma_bf16" : "yc_mma_f16"},
       {"@NCHW_IN@", t.in_nchw ? "1" : "0"},
       {"@HALO@", std::to_string(cfg.get("halo"))},
       {"@PERS@", std::to_string(cfg.get("pers"))},
       {"@CVT@", t.dtype == DType::kBFloat16 ? "yc_float_to_bf16" : "yc_float_to_half"}});
  // A block per bm output pixels, or per halo tile (bm / halo rows of halo pixels of one image).
  const int64_t halo = cfg.get("halo");
  const int64_t blocks =
      halo == 0 ? cpu::ceil_div(t.conv.n * t.conv.oh * t.conv.ow, bm)
                : t.conv.n * cpu::ceil_div(t.conv.oh, bm / halo) * cpu::ceil_div(t.conv.ow, halo);
  // (Two teams of a persistent block take two tiles at a time.)
  k.grid = {static_cast<unsigned>(cpu::ceil_div(blocks, teams(cfg))),
            static_cast<unsigned>(cpu::ceil_div(t.conv.k, bn)), static_cast<unsigned>(splitk)};
  k.block = {static_cast<unsigned>((bm / wm) * (bn / wn) * 32 * teams(cfg)), 1, 1};
  k.cluster = {1, 1, static_cast<unsigned>(splitk)};
  k.shared_bytes = static_cast<unsigned>(kernel_shared_bytes(t, cfg));
  k.persistent = cfg.get("pers") > 0;
  return k;
}

Tensor TensorCoreConvTemplate::pack_b2b_weights(const CudaConvTask& task) {
  YOLOC_CHECK(task.b2b.has_value(), "{} is no back-to-back pair", task.key());
  const int64_t k2 = task.b2b->k, n1 = task.conv.k, n1p = cpu::ceil_div(n1, 16) * 16;
  Tensor packed(DType::kFloat32, {k2, n1p});
  float* p = packed.data<float>();
  std::fill(p, p + packed.numel(), 0.f);
  const Tensor w = task.b2b->w.cast(DType::kFloat32);
  for (int64_t n = 0; n < k2; ++n)
    for (int64_t c = 0; c < n1; ++c) p[n * n1p + c] = w.data<float>()[n * n1 + c];
  return packed.cast(task.dtype);
}

Tensor TensorCoreConvTemplate::pack_weights(const CudaConvTask& task, const float* oihw) {
  const ConvTask& t = task.conv;
  const int64_t depth = gemm_depth8(task);
  Tensor packed(DType::kFloat32, {t.k, depth});
  float* p = packed.data<float>();
  std::fill(p, p + packed.numel(), 0.f);
  for (int64_t n = 0; n < t.k; ++n)
    for (int64_t r = 0; r < t.kh; ++r)
      for (int64_t s = 0; s < t.kw; ++s)
        for (int64_t c = 0; c < t.c; ++c)
          p[n * depth + (r * t.kw + s) * t.c + c] = oihw[((n * t.c + c) * t.kh + r) * t.kw + s];
  return packed.cast(task.dtype);
}

}  // namespace yoloc::codegen::cuda
