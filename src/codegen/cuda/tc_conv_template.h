#pragma once
/// The tensor-core conv template: an implicit-GEMM convolution of NHWC fp16 or bf16 activations
/// with fp32 accumulation on mma.sync.m16n8k16 (sm_80 and up), for the fused group "Conv (+bias)
/// (+ReLU/SiLU) (+residual Add)" written into any channel slice of its output buffer, NHWC or NCHW
/// (CudaConvTask::out_nchw: a warp's stores then write runs of 8 pixels of one channel plane).
///
/// The GEMM: M = N*OH*OW output pixels (rows), K output channels (columns), depth KG = KH*KW*C
/// taken in the order (kh, kw, c), c fastest. A block computes a BM x BN tile of the output with
/// (BM/WM) x (BN/WN) warps of WM x WN each; the depth is walked in BK steps through a STAGES-deep
/// ring of shared-memory tiles filled by cp.async (16-byte copies, zero-filled outside the image
/// and past the depth), read into mma fragments by ldmatrix. Inputs whose channel count, slice
/// stride or offset is not a multiple of 8 (the 3-channel first conv) cannot be copied in 16-byte
/// pieces: their tiles are gathered element by element over the same (kh, kw, c) order, so the
/// depth stays KG = KH*KW*C (27 for a 3x3 RGB conv, one 32-deep step) instead of padding C.
///
/// Halo tiles (knob "halo" = TW > 0): a block's BM pixels are BM/TW rows of TW pixels of one image
/// (the grid walks images x tile rows x tile columns; pixels past the image's edge are computed and
/// not stored). The block copies the input window of its tile, (BM/TW - 1)*SH + (KH-1)*DH + 1 rows
/// of (TW - 1)*SW + (KW-1)*DW + 1 pixels, all C channels (zeros outside the image), to shared
/// memory once, with the first pipeline stage; then each 16-deep slice of the depth is that tile
/// read at the slice's tap: ldmatrix takes one row address per lane, so a lane addresses its
/// pixel's window corner plus the tap's offset. Columns are stored by phase (column % SW) and a
/// pixel's C + 8 halves are an odd number of 16-byte chunks, so the 8 pixels of an ldmatrix
/// matrix fall on distinct banks at every tap and stride. Only the weights stream through the
/// ring. A 3x3 conv so reads each input pixel about (1 + 2/rows)(1 + 2/TW) times instead of 9
/// times through L1, and the main loop has no A copies; it needs C a multiple of 16 (a slice in
/// one tap) and 16-byte copies, and takes no split-K and no l1. A b2b pair's first stage may run
/// on halo tiles (its ring then starts after the tile, and its second stage's rows map to pixels
/// as the first's).
///
/// Split-K (sm_90): with SPLITK > 1 a tile is computed by a thread-block cluster of SPLITK blocks
/// (grid z, cluster dims (1, 1, SPLITK) declared by the kernel, so a plain launch makes them);
/// block z runs depth steps [KT*z/SPLITK, KT*(z+1)/SPLITK) of the KT, then the blocks sum their
/// partial accumulators through distributed shared memory (each writes its own into its shared
/// memory; after a cluster barrier, block z reads a share of the fragments from all the blocks
/// and applies the epilogue to them). For the small layers of batch 1, whose few tiles each run
/// tens of dependent steps, it spreads a tile's depth over more multiprocessors, with no extra
/// launch and no global workspace.
///
/// Back-to-back (CudaConvTask::b2b, after CUTLASS's b2b GEMMs): "conv, then the 1x1 conv that
/// alone consumes it" in one kernel. A block's tile covers all N1 = K channels of the first conv
/// (BN >= N1 rounded up to 16, one column of tiles, no split-K, no staged epilogue): after the
/// main loop it applies the first epilogue (bias, activation), rounds the intermediate to the
/// activation dtype (as the unfused pair stores it) into shared memory over the ring, and runs
/// the second GEMM (BM x K2, depth N1) from there with the 1x1 weights, which were loaded into
/// shared memory with the first pipeline stage, BN columns at a time in the same warp layout; then
/// the second epilogue (bias2, activation2, its output slice, NHWC or NCHW). The intermediate
/// never reaches memory, and one launch replaces two. The kernel takes two parameters after the
/// common ones: (x, w, bias, res, y, w2, bias2), w2 what pack_b2b_weights makes, bias2 K2 float32
/// values, y the second stage's output, res unused. A pair decoding a level's DFL boxes
/// (CudaConvTask::boxes; staged epilogue only) takes the tail's table after bias2 and y is the
/// detector's output: once its second-stage tile (the S x R logits) is staged, a thread per pixel
/// runs the detect tail's box unit on its logits in shared memory and stores its box channels.
///
/// Warpgroup MMA (knob "wg", sm_90 only; the kernel is built for sm_90a): the warps form warpgroups
/// of 4 that each compute 4*WM x WN with wgmma.mma_async m64nWNk16, A from registers (the same
/// ldmatrix fragments; warp r of a group holds rows 16 r + 64 mi) and B read by the tensor cores
/// straight from the step's weight tile, which is then stored as wgmma's core matrices (8 channels
/// x 8 depths in 128 contiguous bytes) instead of padded rows. Each step loads all its A
/// fragments, issues its wgmmas and waits for them before the next. No split-K, no b2b pair. On an
/// H200 it computes what mma.sync does, and more slowly: in a batch-128 tune of yolov8n its best
/// config was slower than mma.sync's on all 25 layers where both were measured: 1.14x to 1.5x on
/// 18, up to 10x on the others (1.28x on the 64 -> 144 head conv, 519 against 405 us), so the
/// tuner keeps mma.sync.
///
/// wg=2: A from shared memory too (wgmma.mma_async with two descriptors): both tiles stored as
/// rows of BK halves whose 16-byte chunks are swizzled over 8 rows (wgmma's 32B, 64B or 128B
/// K-major modes for BK 16, 32, 64), each step's wgmmas left running while the warps wait for
/// and issue the next step (wgmma.wait_group 1), so the copies run STAGES - 2 steps ahead (3+
/// stages). Warp tiles up to 256 channels (one instruction as wide as the block tile), up to 144
/// accumulators a thread. On an H200 at batch 128 it beats mma.sync on the 128- to
/// 256-channel layers (down to 0.72x), not on the 16- and 32-channel ones; unswizzled core
/// matrices were 1.55x slower at the median layer (bank conflicts on the tensor cores' reads).
/// With halo tiles 8 pixels wide (halo=8), A is read by the tensor cores from the halo tile
/// itself: stored in slabs of 64, 32 or 16 channels as swizzled rows of one pixel, an m-tile is
/// 8 output rows of 8 pixels, whose pixels at a tap are 8 consecutive rows of a slab and whose
/// output rows are a fixed stride apart, so one descriptor per m-tile and 16-deep slice starts at
/// that tap's first pixel (the swizzle is anchored at the slab's start, not the descriptor's).
/// A 3x3 conv then reads its input about 1.3 times instead of 9 times, and only the weights
/// stream. A b2b pair's first stage may be wg=2 too: its accumulators are mma.sync's fragments
/// of the warps' rows, so the intermediate tile and the second stage (mma.sync) are as above.
///
/// Persistent blocks (knob "pers", wg=2 on halo tiles 8 pixels wide, no b2b pair): the weight
/// tiles of every depth step are copied to shared memory once and stay; the block's warps, in one
/// team (pers=1) or two (pers=2, each team a tile at a time, synchronised by named barriers),
/// walk the tiles in a grid-stride loop, the kernel marked CudaKernel::persistent so that the
/// launch caps the grid at the blocks the GPU holds at once. A tile's wgmmas all read shared
/// memory, so they are issued in one group with no copy waits. One team copies the next tile's
/// halo into a second buffer while this one's wgmmas run; two teams have a buffer each and copy
/// once their wgmmas are done, while the other team's run. On an H200 at batch 128 it gains on
/// the 16-channel 3x3 convs at 160x160 and the 80 -> 80 3x3 convs (3-6 %), and loses elsewhere
/// (the 64 -> 144 head: 436 us with one team, 396 us with two, 353 us without): a persistent
/// block alone on its multiprocessor leaves the tensor cores idle through each tile's epilogue
/// and halo wait, which two non-persistent blocks cover for each other.
///
/// Upsampled input (CudaConvTask::up_in; 1x1 stride-1 convs, no b2b pair):
/// the channels of the input that a fused-away nearest Resize wrote into the conv's input concat
/// are copied from the Resize's source instead, pixel (h / fh, w / fw), by the same 16-byte
/// copies into im2col rows or halo tiles (the kernel takes that source's pointer, uin, after up). A
/// YOLOv8 neck's C2f after an upsampling then reads a quarter of those bytes, and the Resize's pass
/// (reading them and writing four times as many) goes.
///
/// Weights: what pack_weights makes, [K][KG8] in the activation dtype, KG8 = KG rounded up to 8
/// (zeros past KG): row n holds output channel n's kernel in (kh, kw, c) order.
#include "codegen/cpu/schedule.h"
#include "codegen/cuda/conv_task.h"
#include "yoloc/tensor.h"

namespace yoloc::codegen::cuda {

class TensorCoreConvTemplate {
 public:
  /// True for groups == 1, activations fp16 or bf16, output fp32, fp16 or bf16, slices that hold
  /// their tensors, and fewer than 2^31 output pixels; a b2b pair also needs an NHWC first output
  /// of the activation dtype without residual, and a valid config (shared memory for its tiles
  /// and the second weights): without one the pair is not fused. An upsampled input needs a 1x1
  /// stride-1 conv without b2b pair, its input, the upsampled channels and their source's slice
  /// in 16-byte pieces (multiples of 8 channels).
  static bool matches(const CudaConvTask& t);
  /// Knobs: "bm", "bn" (block tile of pixels x channels), "bk" (depth per pipeline step), "wm",
  /// "wn" (warp tile), "stages" (depth of the shared-memory ring), "splitk" (blocks of a cluster
  /// per tile, 1 2 4 8), "l1" (1: the 16-byte input copies allocate in L1, cp.async.ca, else L2
  /// only) and "epi" (1: the block's fp32 output tile is staged in shared memory over the ring
  /// and each thread finishes 8 channels of a pixel with epilogue_vec, 16-byte residual loads and
  /// output stores; an NCHW output keeps the fragment stores), "halo" (0: im2col rows through
  /// the ring; 8, 16, 32: halo tiles that many pixels wide), "wg" (1, 2: warpgroup MMA, see above),
  /// "minb" (0: no bound; else __launch_bounds__'s minimum blocks per multiprocessor, so that
  /// ptxas caps the registers a thread may use: more resident warps, perhaps spills), "pers"
  /// (0: a block a tile; 1, 2: persistent blocks of one or two teams, see above).
  /// "splitk", "l1", "epi", "halo", "wg", "minb" and "pers" came later: a stored config without
  /// them means 1, 0, 0, 0, 0, 0, 0 (Knob::absent). "stages" runs from 2 to 6 (5 and 6 fit sm_90's
  /// shared memory, not the others'). "bn" offers the
  /// powers of two from 16 to 256 and, where K is not a multiple of 64, the multiples of 16 that
  /// divide K (80; 48 and 144 for 144 channels), so that no tensor-core work goes to padding
  /// channels; "wn" then also offers 48 (a 144-channel tile in 3 warps) or 80 (an 80-channel tile
  /// in one).
  static ScheduleSpace space(const CudaConvTask& t);
  /// True when cfg is a point of space(t) with wm | bm, wn | bn, at most 8 warps, at most 128
  /// accumulators per thread and its shared memory (with split-K at least BM*BN floats) within
  /// max_shared_bytes(t.sm) (227 KiB on sm_90); split-K only for t.sm >= 90 and at least one depth
  /// step per split; with l1=1, when the input is copied in 16-byte pieces (NHWC, channels, stride
  /// and offset multiples of 8); with epi=1 and an NHWC output, also when the staged tile fits the
  /// ring and the output (and residual) slice strides and offsets are multiples of 16 bytes; with
  /// halo > 0, when the input is copied in 16-byte pieces, C is a multiple of 16, halo divides bm,
  /// splitk=1, l1=0, and the halo tile plus the ring of weight tiles fit. For
  /// a b2b pair: bn >= N1 rounded up to 16, splitk=1, epi=0, and the ring (halo tile included, or
  /// the intermediate tile over it) plus the second weights within kMaxSharedBytes (99 KiB on every
  /// architecture). With wg=1 or 2: t.sm == 90, splitk=1, and bm a multiple of 4 wm (whole
  /// warpgroups in each column of warps), wg=1 no b2b pair; wg=2 also halo 0 or 8, 3+ stages and bk
  /// <= 64; "wn" wider than 80 and up to 144 accumulators only with wg=2. With minb > 0, when 64 Ki
  /// / (minb x threads) registers hold a thread's accumulators and 32 more (below its accumulators
  /// ptxas refuses a wgmma kernel; two teams count twice the threads). With pers > 0: wg=2, halo=8,
  /// no b2b pair, two halo buffers and every step's weights (and the staged tile with epi=1, one
  /// team only) within max_shared_bytes.
  static bool valid(const CudaConvTask& t, const ScheduleConfig& cfg);
  /// A heuristic config, valid for every matching task: a block tile fitted to K, shrunk until the
  /// grid has about a hundred blocks; then on sm_90 split-K doubled while the grid stays within
  /// 264 blocks (two per multiprocessor of an H100 / H200) and each split keeps 8 depth steps.
  static ScheduleConfig default_config(const CudaConvTask& t);
  /// The kernel; `symbol` names it (a C identifier). Raises InternalError for an invalid config.
  static CudaKernel emit(const CudaConvTask& t, const ScheduleConfig& cfg,
                         const std::string& symbol);
  /// OIHW float32 weights (K*C*KH*KW values) in the kernel's layout and dtype.
  static Tensor pack_weights(const CudaConvTask& t, const float* oihw);
  /// A b2b pair's second weights (t.b2b->w) in the kernel's layout: [K2][N1P] in the activation
  /// dtype, N1P = N1 rounded up to 16 (zeros past N1).
  static Tensor pack_b2b_weights(const CudaConvTask& t);
};

}  // namespace yoloc::codegen::cuda
