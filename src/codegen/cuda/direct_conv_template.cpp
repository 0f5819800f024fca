#include "codegen/cuda/direct_conv_template.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/cpu/emit_util.h"
#include "codegen/cuda/cuda_emit.h"
#include "codegen/cuda/kernels/embedded.h"
#include "core/error.h"

namespace yoloc::codegen::cuda {
namespace {

constexpr int64_t kMaxTaps = 256;          // C*KH*KW: the window loop is unrolled completely
constexpr int64_t kMaxStride = 4;          // bounds the input tile of a block (see matches)
constexpr int64_t kMaxExtent = 16;         // (KH - 1) * DH + 1 and the same for columns
constexpr int64_t kMaxAccumulators = 64;   // FMA path: fp32 registers per thread
constexpr int64_t kMaxMmaRegisters = 128;  // MMA path: fragments, depth places, accumulators
constexpr int64_t kMinThreads = 32, kMaxThreads = 512;
constexpr int64_t kTargetBlocks = 264;  // about two per multiprocessor of an H100 / H200
constexpr int64_t kWeightRow = 64;      // KP: K rounded up to this (KB divides it)

int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// The sizes a config gives a block (the enumerators of the kernel, computed the same way).
struct Geometry {
  int64_t tw, th, pt, kb, tn, mma;
  int64_t gn, ty, threads;  // channel groups, thread (m-tile) rows, threads of a block
  int64_t iht, iwt;         // input tile rows and columns
  int64_t pc, ld, cs;       // columns per phase, words per stored tile row and channel
  int64_t lw;               // loader threads per tile row
  int64_t taps, shared;     // window taps, shared-memory bytes
  // Pairs path (knob pairs): the tile stored as the image's 16-bit values from column iw0 - off
  // (a multiple of 8); each (channel, window row) read as pairs of adjacent columns kx0 + 2j,
  // kx0 + 2j + 1 (j < ppr; kx0 = -1 when off is odd: every pair starts at an even place), one
  // 32-bit word each; rows of ldh halves, channels csh halves apart.
  int64_t pairs = 0, off = 0, kx0 = 0, ppr = 0, np = 0, ldh0 = 0, ldh = 0, csh = 0;

  Geometry(const CudaConvTask& task, int64_t tw_, int64_t th_, int64_t pt_, int64_t kb_,
           int64_t tn_, int64_t mma_)
      : tw(tw_), th(th_), pt(pt_), kb(kb_), tn(tn_), mma(mma_) {
    const ConvTask& t = task.conv;
    gn = kb / tn;
    ty = th / pt;
    threads = mma ? 32 * gn * (tw / 16) * ty : gn * tw * ty;
    iht = (th - 1) * t.sh + (t.kh - 1) * t.dh + 1;
    iwt = (tw - 1) * t.sw + (t.kw - 1) * t.dw + 1;
    pc = cpu::ceil_div(iwt, t.sw);
    // A warp whose threads span several tile rows (tw * gn < 32 of them per row) reads, at a
    // tap, words ty * SH * LD + tx: without bank conflicts when SH * LD = TW (mod 32).
    ld = t.sw * pc;
    if (tw * gn < 32) {
      for (int64_t l = ld; l < t.sw * pc + 32; ++l) {
        if ((t.sh * l - tw) % 32 == 0) {
          ld = l;
          break;
        }
      }
    }
    cs = iht * ld;
    lw = std::min<int64_t>(32, pow2_ceil(iwt));
    taps = t.c * t.kh * t.kw;
    // MMA path: at most what spread_mma_reads may add.
    shared = (taps * kb + t.c * (mma ? iht * (ld + 31) + 31 : cs)) * 4;
  }

  // MMA path: the row and channel strides of the stored tile (LD in [SW*PC, SW*PC + 32), CS in
  // [IHT*LD, IHT*LD + 32)) with the fewest shared-memory wavefronts over a warp's A-fragment
  // reads. Lane (gq, tq) of a read is at pixel word XS * gq (+ the warp's base) plus the place of
  // its depth index 16*ks + 2*tq + {0, 1, 8, 9}: the four places, depending on the strides, may put
  // the lanes of different tq on the same banks (4 ways for the stem with dense strides).
  void spread_mma_reads(const ConvTask& t) {
    int64_t best = -1;
    const int64_t ld0 = t.sw * pc, xs = tw / 16;
    for (int64_t l = ld0; l < ld0 + 32; ++l) {
      for (int64_t c = iht * l; c < iht * l + 32; ++c) {
        int64_t cost = 0;
        for (int64_t ks = 0; ks * 16 < taps && (best < 0 || cost < best); ++ks) {
          for (int64_t e = 0; e < 4; ++e) {
            int64_t places[4];
            for (int64_t tq = 0; tq < 4; ++tq) {
              const int64_t k = ks * 16 + 2 * tq + (e & 1) + (e >> 1) * 8;
              const int64_t ch = k / (t.kh * t.kw), r = k / t.kw % t.kh, sc = k % t.kw;
              places[tq] =
                  k < taps ? ch * c + r * t.dh * l + sc * t.dw % t.sw * pc + sc * t.dw / t.sw : 0;
            }
            // Wavefronts: the most distinct words on one bank (equal words are broadcast).
            int64_t banks[32] = {};
            for (int64_t tq = 0; tq < 4; ++tq) {
              if (std::find(places, places + tq, places[tq]) != places + tq) continue;
              for (int64_t gq = 0; gq < 8; ++gq) ++banks[(places[tq] + xs * gq) % 32];
            }
            cost += *std::max_element(banks, banks + 32);
          }
        }
        if (best < 0 || cost < best) {
          best = cost;
          ld = l;
          cs = c;
        }
      }
    }
    shared = (taps * kb + t.c * cs) * 4;
  }
  explicit Geometry(const CudaConvTask& task, const ScheduleConfig& cfg)
      : Geometry(task, cfg.get("tw"), cfg.get("th"), cfg.get("pt"), cfg.get("kb"), cfg.get("tn"),
                 cfg.get("mma")) {
    if (cfg.get("pairs") == 1) set_pairs(task.conv);
  }

  // The pairs path's sizes, and the strides (ldh, csh: multiples of 8 halves, for 16-byte
  // stores) with the fewest shared-memory wavefronts over a warp's A reads: lane (gq, tq) reads
  // word XS * SW / 2 * gq plus the place of pair 8 * ks + 4 * h + tq.
  void set_pairs(const ConvTask& t) {
    pairs = 1;
    off = (8 - t.pw % 8) % 8;  // iw0 = ox0 * SW - PW with ox0 * SW a multiple of 32
    kx0 = off % 2 == 0 ? 0 : -1;
    ppr = cpu::ceil_div(t.kw - kx0, 2);
    np = t.c * t.kh * ppr;
    // The halves a row loads: the tile's columns and the last pair's second place.
    ldh0 = cpu::ceil_div(std::max(off + iwt, t.sw * (tw - 1) + kx0 + 2 * ppr + off), 8) * 8;
    const int64_t xs = tw / 16 * (t.sw / 2);
    int64_t best = -1;
    for (int64_t l = ldh0; l < ldh0 + 64; l += 8) {
      for (int64_t c = iht * l; c < iht * l + 64; c += 8) {
        int64_t cost = 0;
        for (int64_t p0 = 0; p0 < np && (best < 0 || cost < best); p0 += 4) {
          int64_t banks[32] = {};
          std::vector<int64_t> words;
          for (int64_t tq = 0; tq < 4 && p0 + tq < np; ++tq) {
            const int64_t p = p0 + tq, ch = p / (t.kh * ppr), r = p / ppr % t.kh, j = p % ppr;
            for (int64_t gq = 0; gq < 8; ++gq)
              words.push_back((ch * c + r * t.dh * l + kx0 + 2 * j + off) / 2 + xs * gq);
          }
          std::sort(words.begin(), words.end());
          words.erase(std::unique(words.begin(), words.end()), words.end());
          for (int64_t w : words) ++banks[w % 32];
          cost += *std::max_element(banks, banks + 32);
        }
        if (best < 0 || cost < best) {
          best = cost;
          ldh = l;
          csh = c;
        }
      }
    }
    shared = taps * kb * 4 + t.c * csh * 2;
  }

  // MMA path: weight fragments, depth places and accumulators per thread.
  int64_t mma_registers() const {
    if (pairs) {
      const int64_t ks = cpu::ceil_div(2 * np, 16), nt = tn / 8;
      return ks * nt * 2 + ks * 2 + pt * nt * 4;
    }
    const int64_t ks = cpu::ceil_div(taps, 16), nt = tn / 8;
    return ks * nt * 2 + ks * 4 + pt * nt * 4;
  }

  int64_t blocks(const ConvTask& t) const {
    return t.n * cpu::ceil_div(t.oh, th) * cpu::ceil_div(t.ow, tw) * cpu::ceil_div(t.k, kb);
  }
};

// The input tile of the FMA and MMA paths, fp32 in shared memory (its columns phase-split).
constexpr const char* kScalarTile = cuh::direct_conv_scalar_tile;

// The pairs path's tile (Geometry::set_pairs): the image's rows copied as they are stored, in
// 16-byte pieces from column iw0 - OFF, a multiple of 8 as W is: a piece lies all in the image or
// all outside it (zeros).
constexpr const char* kPairsTile = cuh::direct_conv_pairs_tile;

// The kernel after the common declarations of conv_common_source (in the same namespace). See the
// header for the scheme; the comments here say why.
constexpr const char* kDirectKernel = cuh::direct_conv_kernel;

// The FMA path: thread (g, tx, ty) computes pixels (ty + i * TY, tx), i < PT, of the tile x
// channels n0 + g * TN ... in fp32.
constexpr const char* kFmaCompute = cuh::direct_conv_fma;

// The MMA paths' epilogue.
constexpr const char* kMmaEpilogue = cuh::direct_conv_mma_epilogue;

// The MMA path: warp (g, mx, ty) computes the m-tiles (16 pixels of a tile row) (ty + i * TY,
// columns mx + XS * j, j < 16), i < PT, x channels n0 + g * TN ... with mma.m16n8k16 over the taps
// in 16-deep steps (fp16 or bf16 operands, fp32 accumulators). A lane's depth indices are the same
// in every m-tile: their places in the tile are computed once, and so are its weight fragments.
// Depth past the taps has zero weights; its A elements read the pixel's first tap (finite, and
// in its window anyway).
constexpr const char* kMmaCompute = cuh::direct_conv_mma;

// The pairs path: the MMA path's warps and fragments, its depth the pairs (channel, window row,
// j) of Geometry::set_pairs in that order (P of them, zero-padded to 16-deep steps): A's pair of
// a lane is one 32-bit word of the tile, B's weights of taps outside the window are zeros.
constexpr const char* kPairsCompute = cuh::direct_conv_pairs;

}  // namespace

bool DirectConvTemplate::matches(const CudaConvTask& task) {
  const ConvTask& t = task.conv;
  const bool sizes = t.n > 0 && t.c > 0 && t.h > 0 && t.w > 0 && t.k > 0 && t.oh > 0 && t.ow > 0 &&
                     t.kh > 0 && t.kw > 0 && t.sh > 0 && t.sw > 0 && t.dh > 0 && t.dw > 0 &&
                     t.ph >= 0 && t.pw >= 0;
  if (!sizes || t.groups != 1 || t.c > kMaxChannels) return false;
  const bool window = t.c * t.kh * t.kw <= kMaxTaps && t.sh <= kMaxStride && t.sw <= kMaxStride &&
                      (t.kh - 1) * t.dh + 1 <= kMaxExtent && (t.kw - 1) * t.dw + 1 <= kMaxExtent;
  const auto storable = [](DType d) {
    return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
  };
  // An NCHW input is addressed densely, whatever its slice says.
  const bool in_ok = task.in_nchw ? task.in == ChannelSlice{t.c, 0} && storable(task.image_dtype)
                                  : storable(task.dtype);
  // Pixel indices are 32-bit in the kernel; channel blocks (of 8 or more) are the grid's y.
  const bool fits = t.n * t.oh * t.ow < (int64_t{1} << 31) && t.oh * t.sh < (int64_t{1} << 30) &&
                    t.ow * t.sw < (int64_t{1} << 30) && cpu::ceil_div(t.k, 8) <= 65535;
  return window && in_ok && storable(task.out_dtype) && task.slices_valid() && fits;
}

ScheduleSpace DirectConvTemplate::space(const CudaConvTask&) {
  ScheduleSpace s;
  s.knobs.push_back({"tw", "output columns per block tile", {8, 16, 32, 64}});
  s.knobs.push_back({"th", "output rows per block tile", {1, 2, 4, 8, 16, 32}});
  s.knobs.push_back({"pt", "output rows (m-tile rows) per thread (warp)", {1, 2, 4, 8}});
  s.knobs.push_back({"kb", "output channels per block", {8, 16, 32, 64}});
  s.knobs.push_back({"tn", "output channels per thread (warp)", {4, 8, 16, 32}});
  s.knobs.push_back({"mma", "tensor-core m16n8k16 tiles instead of FMAs", {0, 1}});
  s.knobs.push_back({"pairs",
                     "MMA on a 16-bit NCHW image stored as it is, its depth in pairs of adjacent "
                     "columns (one 32-bit word each) copied in 16-byte pieces",
                     {0, 1},
                     0});
  return s;
}

bool DirectConvTemplate::valid(const CudaConvTask& t, const ScheduleConfig& cfg) {
  if (!matches(t) || !cfg.in_space(space(t))) return false;
  const Geometry geo(t, cfg);
  // Pairs: the image's own 16-bit values are the MMA's operands, rows of 16-byte pieces (W a
  // multiple of 8), even strides along rows (a pair's first place stays even), adjacent taps.
  const ConvTask& c = t.conv;
  if (cfg.get("pairs") == 1 && !(geo.mma && t.in_nchw && t.image_dtype == t.dtype && c.w % 8 == 0 &&
                                 c.sw % 2 == 0 && c.dw == 1))
    return false;
  const bool path = geo.mma ? (t.dtype == DType::kFloat16 || t.dtype == DType::kBFloat16) &&
                                  geo.tw % 16 == 0 && geo.tn % 8 == 0 &&
                                  geo.mma_registers() <= kMaxMmaRegisters
                            : geo.pt * geo.tn <= kMaxAccumulators;
  return path && geo.th % geo.pt == 0 && geo.kb % geo.tn == 0 &&
         geo.kb <= std::max<int64_t>(8, pow2_ceil(t.conv.k)) && geo.threads >= kMinThreads &&
         geo.threads <= kMaxThreads && geo.shared <= kMaxSharedBytes;
}

ScheduleConfig DirectConvTemplate::default_config(const CudaConvTask& task) {
  YOLOC_CHECK(matches(task), "direct conv template does not match {}", task.key());
  const ConvTask& t = task.conv;
  // Tensor cores for 16-bit operands (they round the image as the tensor-core template did).
  const int64_t mma = task.dtype == DType::kFloat16 || task.dtype == DType::kBFloat16 ? 1 : 0;
  int64_t kb = std::clamp<int64_t>(pow2_ceil(t.k), 8, 64);
  int64_t tn = std::min<int64_t>(kb, 16);
  int64_t tw = 32;
  while (tw > (mma ? 16 : 8) && tw / 2 >= t.ow) tw /= 2;
  // FMA: 128 threads of 4 pixel rows; MMA: 8 warps of 4 m-tile rows; where the tile rows allow.
  int64_t pt = 4;
  const int64_t ty =
      std::clamp<int64_t>(mma ? 8 / ((kb / tn) * (tw / 16)) : 128 / ((kb / tn) * tw), 1, 32 / pt);
  int64_t th = ty * pt;
  const auto geo = [&] { return Geometry(task, tw, th, pt, kb, tn, mma); };
  // Smaller tiles for small layers, so that more multiprocessors get work, and where the shared
  // memory would not hold the tile: fewer rows per thread first (the same threads), then fewer
  // thread rows.
  while (th > 1 &&
         (geo().blocks(t) < kTargetBlocks || th / 2 >= t.oh || geo().shared > kMaxSharedBytes)) {
    if (pt > 1) {
      pt /= 2;
      th /= 2;
    } else if (Geometry(task, tw, th / 2, pt, kb, tn, mma).threads >= kMinThreads) {
      th /= 2;
    } else {
      break;
    }
  }
  // Wide windows of many channels: fewer channels per block (more channel groups keep the
  // threads).
  while ((geo().shared > kMaxSharedBytes || (mma && geo().mma_registers() > kMaxMmaRegisters)) &&
         kb > 8) {
    kb /= 2;
    tn = std::min<int64_t>(tn, kb);
  }
  ScheduleConfig cfg(
      {{"tw", tw}, {"th", th}, {"pt", pt}, {"kb", kb}, {"tn", tn}, {"mma", mma}, {"pairs", 0}});
  YOLOC_CHECK(valid(task, cfg), "default direct conv config {} invalid for {}", cfg.str(),
              task.key());
  return cfg;
}

CudaKernel DirectConvTemplate::emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                                    const std::string& symbol) {
  YOLOC_CHECK(valid(t, cfg), "direct conv config {} invalid for {}", cfg.str(), t.key());
  Geometry geo(t, cfg);
  if (geo.mma && !geo.pairs) geo.spread_mma_reads(t.conv);
  const bool bf16 = t.dtype == DType::kBFloat16;
  CudaKernel k = conv_kernel(t, symbol, "direct ", cfg.str(), kDirectKernel,
                             {{"@COMPUTE@", geo.pairs ? kPairsCompute
                                            : geo.mma ? kMmaCompute
                                                      : kFmaCompute},
                              {"@TILE@", geo.pairs ? kPairsTile : kScalarTile},
                              {"@MMA_EPILOGUE@", kMmaEpilogue},
                              {"@OFF@", std::to_string(geo.off)},
                              {"@KX0@", std::to_string(geo.kx0)},
                              {"@PPR@", std::to_string(geo.ppr)},
                              {"@LDH0@", std::to_string(geo.ldh0)},
                              {"@LDH@", std::to_string(geo.ldh)},
                              {"@CSH@", std::to_string(geo.csh)},
                              {"@MMA@", std::to_string(geo.mma)},
                              {"@MMA_FN@", bf16 ? "yc_mma_bf16" : "yc_mma_f16"},
                              {"@CVT@", bf16 ? "yc_float_to_bf16" : "yc_float_to_half"},
                              {"@XT@", cuda_storage_type(t.in_nchw ? t.image_dtype : t.dtype)},
                              {"@TW@", std::to_string(geo.tw)},
                              {"@TH@", std::to_string(geo.th)},
                              {"@PT@", std::to_string(geo.pt)},
                              {"@KB@", std::to_string(geo.kb)},
                              {"@TN@", std::to_string(geo.tn)},
                              {"@NCHW_IN@", t.in_nchw ? "1" : "0"},
                              {"@LD@", std::to_string(geo.ld)},
                              {"@CS@", std::to_string(geo.cs)},
                              {"@LW@", std::to_string(geo.lw)}});
  const ConvTask& c = t.conv;
  k.grid = {static_cast<unsigned>(c.n * cpu::ceil_div(c.oh, geo.th) * cpu::ceil_div(c.ow, geo.tw)),
            static_cast<unsigned>(cpu::ceil_div(c.k, geo.kb)), 1};
  k.block = {static_cast<unsigned>(geo.threads), 1, 1};
  k.shared_bytes = static_cast<unsigned>(geo.shared);
  return k;
}

Tensor DirectConvTemplate::pack_weights(const CudaConvTask& task, const float* oihw) {
  return tap_major_weights(task.conv, oihw, kWeightRow);
}

}  // namespace yoloc::codegen::cuda
