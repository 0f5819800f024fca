#include "codegen/cuda/detect_kernels.h"

#include <fmt/format.h>

#include "codegen/cuda/cuda_emit.h"
#include "core/error.h"
#include "artifact/cuda_detect_params.h"
#include "detect/nms.h"

namespace yoloc::codegen::cuda {

namespace rt = artifact::cuda;

namespace {

constexpr unsigned kThreads = 256;  // every kernel's block; the NMS chunk
constexpr int kMaxDetCap = 1000;    // the NMS kernel keeps max_det boxes in shared memory

// Arithmetic helpers whose rounding must be the host's: round-to-nearest intrinsics are never
// contracted into FMAs (nvcc and NVRTC contract a * b + c by default).
constexpr const char* kDeviceOps = R"(#ifndef YOLOC_DETECT_DEVICE_OPS
#define YOLOC_DETECT_DEVICE_OPS
YC_DEVICE float yc_fadd(float a, float b) { return __fadd_rn(a, b); }
YC_DEVICE float yc_fsub(float a, float b) { return __fsub_rn(a, b); }
YC_DEVICE float yc_fmul(float a, float b) { return __fmul_rn(a, b); }
YC_DEVICE float yc_fdiv(float a, float b) { return __fdiv_rn(a, b); }
YC_DEVICE double yc_dadd(double a, double b) { return __dadd_rn(a, b); }
YC_DEVICE double yc_dmul(double a, double b) { return __dmul_rn(a, b); }
YC_DEVICE double yc_ddiv(double a, double b) { return __ddiv_rn(a, b); }
YC_DEVICE float yc_floorf(float v) { return floorf(v); }
YC_DEVICE float yc_rintf(float v) { return rintf(v); }
// exp through double, rounded once: the correctly rounded expf of glibc but in rare cases (expf
// itself is off by up to 2 ulp).
YC_DEVICE float yc_expf_rn(float v) { return static_cast<float>(exp(static_cast<double>(v))); }
YC_DEVICE unsigned yc_float_bits(float v) { return __float_as_uint(v); }
#endif  // YOLOC_DETECT_DEVICE_OPS
)";

// The per-element arithmetic, mirroring src/detect (preprocess.cpp, decode.cpp) operation by
// operation.
constexpr const char* kDeviceFunctions = R"(
// std::min / std::max, NaN behaviour included (the second argument only when it compares).
YC_DEVICE float yc_minf(float a, float b) { return b < a ? b : a; }
YC_DEVICE float yc_maxf(float a, float b) { return a < b ? b : a; }

// OpenCV INTER_LINEAR taps of output coordinate d, resizing src -> dst: source indices and
// 11-bit weights (detect/preprocess.cpp linear_taps).
struct YcTap {
  int i0, i1, w0, w1;
};
YC_DEVICE YcTap yc_linear_tap(int d, int src, int dst) {
  const double scale = yc_ddiv(static_cast<double>(src), static_cast<double>(dst));
  float f = static_cast<float>(yc_dadd(yc_dmul(yc_dadd(static_cast<double>(d), 0.5), scale), -0.5));
  int s = static_cast<int>(yc_floorf(f));
  f = yc_fsub(f, static_cast<float>(s));
  if (s < 0) s = 0, f = 0.0f;
  if (s >= src - 1) s = src - 1, f = 0.0f;
  YcTap t;
  t.i0 = s;
  t.i1 = s + 1 < src ? s + 1 : src - 1;
  t.w0 = static_cast<int>(yc_rintf(yc_fmul(yc_fsub(1.0f, f), 2048.0f)));
  t.w1 = static_cast<int>(yc_rintf(yc_fmul(f, 2048.0f)));
  return t;
}

// Network-input pixel (x, y) of frame g (top-left byte `frame`): the bilinear sample of the
// resized frame pasted at (left, top), grey 114 elsewhere; channel c of v from source channel
// 2 - c when to_rgb, divided by `divisor` (a true division, as numpy's).
YC_DEVICE void yc_preprocess_pixel(const unsigned char* frame, const YcImageParams& g, int x,
                                   int y, bool to_rgb, float divisor, float* v) {
  int px[3] = {114, 114, 114};
  const int rx = x - g.left, ry = y - g.top;
  if (rx >= 0 && ry >= 0 && rx < g.new_w && ry < g.new_h) {
    const YcTap tx = yc_linear_tap(rx, g.src_w, g.new_w);
    const YcTap ty = yc_linear_tap(ry, g.src_h, g.new_h);
    const unsigned char* r0 = frame + static_cast<long long>(ty.i0) * g.src_pitch;
    const unsigned char* r1 = frame + static_cast<long long>(ty.i1) * g.src_pitch;
    for (int c = 0; c < 3; ++c) {
      const int h0 = r0[tx.i0 * 3 + c] * tx.w0 + r0[tx.i1 * 3 + c] * tx.w1;
      const int h1 = r1[tx.i0 * 3 + c] * tx.w0 + r1[tx.i1 * 3 + c] * tx.w1;
      const long long s = static_cast<long long>(h0) * ty.w0 + static_cast<long long>(h1) * ty.w1;
      const long long q = (s + (1LL << 21)) >> 22;
      px[c] = q < 0 ? 0 : q > 255 ? 255 : static_cast<int>(q);
    }
  }
  for (int c = 0; c < 3; ++c) v[c] = yc_fdiv(static_cast<float>(px[to_rgb ? 2 - c : c]), divisor);
}

YC_DEVICE YcDetection yc_from_center(float cx, float cy, float w, float h, float score, int cls) {
  const float hw = yc_fdiv(w, 2.0f), hh = yc_fdiv(h, 2.0f);
  YcDetection d;
  d.x1 = yc_fsub(cx, hw);
  d.y1 = yc_fsub(cy, hh);
  d.x2 = yc_fadd(cx, hw);
  d.y2 = yc_fadd(cy, hh);
  d.score = score;
  d.class_id = cls;
  return d;
}

// Index and value of the largest of n strided values, the first on ties.
template <typename T>
YC_DEVICE void yc_best_class(const T* p, int n, long long stride, int& best, float& v) {
  best = 0;
  v = yc_load(p);
  for (int c = 1; c < n; ++c) {
    const float x = yc_load(p + c * stride);
    if (x > v) v = x, best = c;
  }
}

// Anchor i of a v8 head item (4 + classes rows of n): a candidate when its best class score
// is > conf.
template <typename T>
YC_DEVICE bool yc_decode_v8(const T* p, int n, int classes, int i, float conf, YcDetection& d) {
  int cls;
  float score;
  yc_best_class(p + 4LL * n + i, classes, n, cls, score);
  if (!(score > conf)) return false;
  d = yc_from_center(yc_load(p + i), yc_load(p + n + i), yc_load(p + 2LL * n + i),
                     yc_load(p + 3LL * n + i), score, cls);
  return true;
}

// The YOLOX grid cell (gx, gy) and stride of row i for a w x h input: levels of stride 8, 16,
// 32, each row-major. False past the last cell.
YC_DEVICE bool yc_yolox_cell(int i, int w, int h, float& gx, float& gy, float& s) {
  for (int stride = 8; stride <= 32; stride *= 2) {
    const int gw = w / stride, cells = gw * (h / stride);
    if (i < cells) {
      gx = static_cast<float>(i % gw);
      gy = static_cast<float>(i / gw);
      s = static_cast<float>(stride);
      return true;
    }
    i -= cells;
  }
  return false;
}

// Row i of a v5 / YOLOX head item (rows of cols = 5 + classes): score = objectness x best
// class score, > conf (v5) or >= conf (YOLOX); YOLOX boxes are grid offsets of cell (gx, gy).
template <typename T>
YC_DEVICE bool yc_decode_rows(const T* p, int cols, int i, bool yolox, float gx, float gy,
                              float s, float conf, YcDetection& d) {
  const T* r = p + static_cast<long long>(i) * cols;
  int cls;
  float cls_score;
  yc_best_class(r + 5, cols - 5, 1, cls, cls_score);
  const float score = yc_fmul(yc_load(r + 4), cls_score);
  if (yolox ? !(score >= conf) : !(score > conf)) return false;
  if (yolox) {
    d = yc_from_center(yc_fmul(yc_fadd(yc_load(r), gx), s), yc_fmul(yc_fadd(yc_load(r + 1), gy), s),
                       yc_fmul(yc_expf_rn(yc_load(r + 2)), s),
                       yc_fmul(yc_expf_rn(yc_load(r + 3)), s), score, cls);
  } else {
    d = yc_from_center(yc_load(r), yc_load(r + 1), yc_load(r + 2), yc_load(r + 3), score, cls);
  }
  return true;
}

// Row i of a v10 head item (x1, y1, x2, y2, score, class): kept when score > conf and the class
// is a valid id (the CPU raises an error for an invalid one; here the row is dropped).
template <typename T>
YC_DEVICE bool yc_decode_v10(const T* p, int i, float conf, YcDetection& d) {
  const T* r = p + 6LL * i;
  const float score = yc_load(r + 4), cls = yc_load(r + 5);
  if (!(score > conf)) return false;
  if (!(cls >= 0.0f && cls < 1e6f)) return false;
  d.x1 = yc_load(r);
  d.y1 = yc_load(r + 1);
  d.x2 = yc_load(r + 2);
  d.y2 = yc_load(r + 3);
  d.score = score;
  d.class_id = static_cast<int>(cls);
  return true;
}

// detect::iou.
YC_DEVICE float yc_iou(const YcDetection& a, const YcDetection& b) {
  const float iw = yc_maxf(0.0f, yc_fsub(yc_minf(a.x2, b.x2), yc_maxf(a.x1, b.x1)));
  const float ih = yc_maxf(0.0f, yc_fsub(yc_minf(a.y2, b.y2), yc_maxf(a.y1, b.y1)));
  const float inter = yc_fmul(iw, ih);
  const float area_a =
      yc_fmul(yc_maxf(0.0f, yc_fsub(a.x2, a.x1)), yc_maxf(0.0f, yc_fsub(a.y2, a.y1)));
  const float area_b =
      yc_fmul(yc_maxf(0.0f, yc_fsub(b.x2, b.x1)), yc_maxf(0.0f, yc_fsub(b.y2, b.y1)));
  const float uni = yc_fsub(yc_fadd(area_a, area_b), inter);
  return uni > 0.0f ? yc_fdiv(inter, uni) : 0.0f;
}

// Sort key of a candidate (not NaN): larger first is score descending, then row ascending, the
// order of the CPU's stable sort. -0 ties with +0 as it compares equal.
YC_DEVICE unsigned long long yc_sort_key(float score, int row) {
  if (score == 0.0f) score = 0.0f;
  unsigned u = yc_float_bits(score);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(u) << 32) | (0xffffffffu - static_cast<unsigned>(row));
}
)";

// The kernels of one configuration, in namespace {prefix}. {{ }} are literal braces.
constexpr const char* kKernels = R"(
namespace {prefix} {{
typedef {in_t} InT;
typedef {head_t} HeadT;
enum : int {{
  W = {w}, H = {h}, B = {batch}, THREADS = {threads},
  FAMILY = {family},  // 0 v5, 1 v8, 2 v10, 3 YOLOX
  TO_RGB = {to_rgb},
  D1 = {d1}, D2 = {d2},
  ROWS = {rows},      // anchors / rows of a head item: at most one candidate each
  CAP = {cap},        // candidates per image (= ROWS: the buffer never overflows)
  SCAP = {scap},      // sorted candidates per image (the best detect::kMaxNmsCandidates)
  MAXDET = {max_det_cap},
  WORDS = THREADS / 32
}};
enum : yc_i64 {{
  SB = {sb}, SC = {sc}, SY = {sy}, SX = {sx},
  HEAD_ITEM = static_cast<yc_i64>(D1) * D2,
  WS_KEYS = {ws_keys}, WS_CANDS = {ws_cands}, WS_SORTED = {ws_sorted}, RES_DETS = {res_dets}
}};

YC_KERNEL void YC_LAUNCH_BOUNDS(THREADS)
    {prefix}_pre(const unsigned char* __restrict__ frames,
                 const YcImageParams* __restrict__ images, InT* __restrict__ out) {{
  YC_KERNEL_ENTRY();
  const int p = blockIdx.x * THREADS + threadIdx.x;
  if (p >= W * H) return;
  const int b = blockIdx.y, x = p % W, y = p / W;
  const YcImageParams g = images[b];
  float v[3];
  yc_preprocess_pixel(frames + g.src_offset, g, x, y, TO_RGB != 0, TO_RGB ? 255.0f : 1.0f, v);
  InT* o = out + (b * SB + y * SY + x * SX);
  yc_store(o, v[0]);
  yc_store(o + SC, v[1]);
  yc_store(o + 2 * SC, v[2]);
}}

YC_KERNEL void YC_LAUNCH_BOUNDS(THREADS)
    {prefix}_decode(const HeadT* __restrict__ head, const YcDetectParams* __restrict__ params,
                    unsigned char* __restrict__ ws) {{
  YC_KERNEL_ENTRY();
  const int i = blockIdx.x * THREADS + threadIdx.x;
  if (i >= ROWS) return;
  const int b = blockIdx.y;
  const HeadT* p = head + b * HEAD_ITEM;
  const float conf = params->conf;
  YcDetection d;
  bool hit;
  if constexpr (FAMILY == 1) {{
    hit = yc_decode_v8(p, D2, D1 - 4, i, conf, d);
  }} else if constexpr (FAMILY == 2) {{
    hit = yc_decode_v10(p, i, conf, d);
  }} else if constexpr (FAMILY == 3) {{
    float gx = 0.0f, gy = 0.0f, s = 0.0f;
    hit = yc_yolox_cell(i, W, H, gx, gy, s) && yc_decode_rows(p, D2, i, true, gx, gy, s, conf, d);
  }} else {{
    hit = yc_decode_rows(p, D2, i, false, 0.0f, 0.0f, 0.0f, conf, d);
  }}
  if (!hit) return;
  const unsigned slot = atomicAdd(reinterpret_cast<unsigned*>(ws) + b, 1u);
  if (slot >= static_cast<unsigned>(CAP)) return;
  reinterpret_cast<unsigned long long*>(ws + WS_KEYS)[b * static_cast<yc_i64>(CAP) + slot] =
      yc_sort_key(d.score, i);
  reinterpret_cast<YcDetection*>(ws + WS_CANDS)[b * static_cast<yc_i64>(CAP) + slot] = d;
}}

// Candidate j goes to its rank: the number of keys above its own (keys are distinct).
YC_KERNEL void YC_LAUNCH_BOUNDS(THREADS) {prefix}_rank(unsigned char* __restrict__ ws) {{
  YC_KERNEL_ENTRY();
  __shared__ unsigned long long tile[THREADS];
  const int b = blockIdx.y;
  const unsigned counted = reinterpret_cast<const unsigned*>(ws)[b];
  const int n = counted < static_cast<unsigned>(CAP) ? static_cast<int>(counted) : CAP;
  if (static_cast<int>(blockIdx.x) * THREADS >= n) return;  // the whole block
  const int j = blockIdx.x * THREADS + threadIdx.x;
  const unsigned long long* keys =
      reinterpret_cast<const unsigned long long*>(ws + WS_KEYS) + b * static_cast<yc_i64>(CAP);
  const unsigned long long mine = j < n ? keys[j] : 0ull;
  int rank = 0;
  for (int base = 0; base < n; base += THREADS) {{
    const int k = base + threadIdx.x;
    tile[threadIdx.x] = k < n ? keys[k] : 0ull;
    __syncthreads();
    const int m = n - base < THREADS ? n - base : THREADS;
    #pragma unroll 8
    for (int t = 0; t < m; ++t) rank += tile[t] > mine ? 1 : 0;
    __syncthreads();
  }}
  if (j < n && rank < SCAP) {{
    reinterpret_cast<YcDetection*>(ws + WS_SORTED)[b * static_cast<yc_i64>(SCAP) + rank] =
        reinterpret_cast<const YcDetection*>(ws + WS_CANDS)[b * static_cast<yc_i64>(CAP) + j];
  }}
}}

// One block per image: greedy class-wise NMS over the sorted candidates, THREADS at a time.
YC_KERNEL void YC_LAUNCH_BOUNDS(THREADS)
    {prefix}_nms(const YcDetectParams* __restrict__ params, unsigned char* __restrict__ ws,
                 unsigned char* __restrict__ result) {{
  YC_KERNEL_ENTRY();
  __shared__ YcDetection kept_box[MAXDET];
  __shared__ YcDetection chunk[THREADS];
  __shared__ unsigned mask[THREADS][WORDS];  // bit i of row t: chunk box i < t suppresses t
  __shared__ unsigned char dropped[THREADS];  // suppressed by a box kept before the chunk
  __shared__ int kept_n;
  const int b = blockIdx.x, t = threadIdx.x;
  unsigned* counter = reinterpret_cast<unsigned*>(ws) + b;
  const unsigned counted = *counter;
  int n = counted < static_cast<unsigned>(CAP) ? static_cast<int>(counted) : CAP;
  n = n < SCAP ? n : SCAP;
  const int max_det = params->max_det < 0 ? 0 : params->max_det > MAXDET ? MAXDET : params->max_det;
  const float thr = params->iou;
  const YcDetection* sorted =
      reinterpret_cast<const YcDetection*>(ws + WS_SORTED) + b * static_cast<yc_i64>(SCAP);
  YcDetection* out =
      reinterpret_cast<YcDetection*>(result + RES_DETS) + b * static_cast<yc_i64>(MAXDET);
  int* out_count = reinterpret_cast<int*>(result) + b;
  if constexpr (FAMILY == 2) {{
    // End-to-end head: already one box per object, only ordered and capped.
    const int k = n < max_det ? n : max_det;
    for (int i = t; i < k; i += THREADS) out[i] = sorted[i];
    __syncthreads();
    if (t == 0) {{
      *out_count = k;
      *counter = 0u;
    }}
    return;
  }}
  if (t == 0) kept_n = 0;
  __syncthreads();
  for (int base = 0; base < n; base += THREADS) {{
    const int kept = kept_n;
    if (kept >= max_det) break;
    const int j = base + t;
    YcDetection c;
    c.x1 = c.y1 = c.x2 = c.y2 = c.score = 0.0f;
    c.class_id = -1;
    bool drop = j >= n;
    if (!drop) c = sorted[j];
    for (int k = 0; k < kept && !drop; ++k)
      drop = kept_box[k].class_id == c.class_id && yc_iou(kept_box[k], c) > thr;
    chunk[t] = c;
    dropped[t] = drop ? 1 : 0;
    __syncthreads();
    for (int w = 0; w < WORDS; ++w) {{
      unsigned bits = 0u;
      if (!drop) {{
        const int end = t < (w + 1) * 32 ? t : (w + 1) * 32;
        for (int i = w * 32; i < end; ++i)
          if (!dropped[i] && chunk[i].class_id == c.class_id && yc_iou(chunk[i], c) > thr)
            bits |= 1u << (i - w * 32);
      }}
      mask[t][w] = bits;
    }}
    __syncthreads();
    if (t == 0) {{
      unsigned kept_bits[WORDS];
      #pragma unroll
      for (int w = 0; w < WORDS; ++w) kept_bits[w] = 0u;
      int k = kept;
      const int m = n - base < THREADS ? n - base : THREADS;
      for (int i = 0; i < m && k < max_det; ++i) {{
        if (dropped[i]) continue;
        unsigned hit = 0u;
        #pragma unroll
        for (int w = 0; w < WORDS; ++w) hit |= mask[i][w] & kept_bits[w];
        if (hit) continue;
        #pragma unroll
        for (int w = 0; w < WORDS; ++w)
          if (w == i / 32) kept_bits[w] |= 1u << (i % 32);
        kept_box[k] = chunk[i];
        out[k] = chunk[i];
        ++k;
      }}
      kept_n = k;
    }}
    __syncthreads();
  }}
  if (t == 0) {{
    *out_count = kept_n;
    *counter = 0u;
  }}
}}
}}  // namespace {prefix}
)";

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void check_dtype(DType t, const char* what) {
  if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16)
    user_error(
        "GPU detection kernels: the {} has element type {}; expected float32, float16 or "
        "bfloat16",
        what, dtype_name(t));
}

[[noreturn]] void bad_head(const DetectKernelConfig& c, const char* expected) {
  user_error(
      "the {} head expects an output of shape {}, but the model's output is ({}, {}, {}); "
      "if the family is wrong, pass --family yolov5|yolov8|yolov10|yolox",
      detect::family_name(c.family), expected, c.head_shape[0], c.head_shape[1], c.head_shape[2]);
}

int family_code(detect::Family f) {
  switch (f) {
    case detect::Family::kYoloV5: return 0;
    case detect::Family::kYoloV8: return 1;
    case detect::Family::kYoloV10: return 2;
    case detect::Family::kYoloX: return 3;
  }
  internal_error("bad Family {}", static_cast<int>(f));
}

}  // namespace

InputStrides nchw_strides(int w, int h) {
  const int64_t plane = static_cast<int64_t>(w) * h;
  return {3 * plane, plane, w, 1};
}

InputStrides nhwc_strides(int w, int h) {
  return {3 * static_cast<int64_t>(w) * h, 1, 3 * static_cast<int64_t>(w), 3};
}

std::string detect_device_functions() {
  return std::string("#ifndef YOLOC_DETECT_COMMON\n#define YOLOC_DETECT_COMMON\n") +
         rt::kDetectParamsSource + "\n" + kDeviceOps + kDeviceFunctions +
         "#endif  // YOLOC_DETECT_COMMON\n";
}

DetectKernels emit_detect_kernels(const DetectKernelConfig& c) {
  if (c.input_w <= 0 || c.input_h <= 0)
    user_error("GPU detection kernels: the input size {}x{} must be positive", c.input_w,
               c.input_h);
  check_dtype(c.input_dtype, "network input");
  check_dtype(c.head_dtype, "head output");
  if (c.max_det_cap < 1 || c.max_det_cap > kMaxDetCap)
    user_error("GPU detection kernels: max_det {} must be in [1, {}]", c.max_det_cap, kMaxDetCap);
  const int64_t batch = c.head_shape[0], d1 = c.head_shape[1], d2 = c.head_shape[2];
  if (batch < 1 || batch > 65535 || d1 < 1 || d2 < 1 || d1 * d2 > (int64_t{1} << 31))
    user_error(
        "GPU detection kernels: the head output ({}, {}, {}) must have a batch in "
        "[1, 65535] and positive dims",
        batch, d1, d2);
  int64_t rows = 0;
  switch (c.family) {
    case detect::Family::kYoloV8:
      if (d1 < 5) bad_head(c, "(B, 4+C, N)");
      rows = d2;
      break;
    case detect::Family::kYoloV5:
      if (d2 < 6) bad_head(c, "(B, N, 5+C)");
      rows = d1;
      break;
    case detect::Family::kYoloX: {
      if (d2 < 6) bad_head(c, "(B, N, 5+C)");
      if (c.input_w % 32 != 0 || c.input_h % 32 != 0)
        user_error("YOLOX decoding: the input size {}x{} must be a multiple of 32", c.input_w,
                   c.input_h);
      int64_t cells = 0;
      for (int s : {8, 16, 32}) cells += static_cast<int64_t>(c.input_w / s) * (c.input_h / s);
      if (cells != d1)
        user_error(
            "YOLOX decoding: an input of {}x{} has {} grid cells at strides 8/16/32, but "
            "the head output has {} rows; is this a raw YOLOX head (no in-graph decoding)?",
            c.input_w, c.input_h, cells, d1);
      rows = d1;
      break;
    }
    case detect::Family::kYoloV10:
      if (d2 != 6) bad_head(c, "(B, K, 6)");
      rows = d1;
      break;
  }
  const InputStrides st =
      c.input_strides == InputStrides{} ? nchw_strides(c.input_w, c.input_h) : c.input_strides;
  const int64_t cap = rows;
  const int64_t scap = std::min<int64_t>(cap, detect::kMaxNmsCandidates);
  // Workspace: u32 counters, u64 keys[B][CAP], YcDetection cands[B][CAP], sorted[B][SCAP].
  const int64_t ws_keys = round_up(4 * batch, 256);
  const int64_t ws_cands = round_up(ws_keys + 8 * batch * cap, 256);
  const int64_t ws_sorted =
      round_up(ws_cands + static_cast<int64_t>(sizeof(rt::YcDetection)) * batch * cap, 256);
  const int64_t ws_bytes = ws_sorted + static_cast<int64_t>(sizeof(rt::YcDetection)) * batch * scap;
  const int64_t res_dets = round_up(4 * batch, 16);

  DetectKernels k;
  const std::string& p = c.prefix;
  k.source =
      cuda_prelude() + detect_device_functions() +
      fmt::format(fmt::runtime(kKernels), fmt::arg("prefix", p),
                  fmt::arg("in_t", cuda_storage_type(c.input_dtype)),
                  fmt::arg("head_t", cuda_storage_type(c.head_dtype)), fmt::arg("w", c.input_w),
                  fmt::arg("h", c.input_h), fmt::arg("batch", batch), fmt::arg("threads", kThreads),
                  fmt::arg("family", family_code(c.family)),
                  fmt::arg("to_rgb", c.family == detect::Family::kYoloX ? 0 : 1),
                  fmt::arg("d1", d1), fmt::arg("d2", d2), fmt::arg("rows", rows),
                  fmt::arg("cap", cap), fmt::arg("scap", scap),
                  fmt::arg("max_det_cap", c.max_det_cap), fmt::arg("sb", st[0]),
                  fmt::arg("sc", st[1]), fmt::arg("sy", st[2]), fmt::arg("sx", st[3]),
                  fmt::arg("ws_keys", ws_keys), fmt::arg("ws_cands", ws_cands),
                  fmt::arg("ws_sorted", ws_sorted), fmt::arg("res_dets", res_dets));

  rt::GpuDetectSpec& s = k.spec;
  s.family = c.family;
  s.input_w = c.input_w;
  s.input_h = c.input_h;
  s.batch = static_cast<int>(batch);
  s.max_det_cap = c.max_det_cap;
  s.workspace_bytes = static_cast<size_t>(ws_bytes);
  s.result_dets_offset = static_cast<size_t>(res_dets);
  s.result_bytes = static_cast<size_t>(res_dets) + sizeof(rt::YcDetection) * batch * c.max_det_cap;
  const auto b = static_cast<unsigned>(batch);
  const std::array<unsigned, 3> block{kThreads, 1, 1};
  s.pre = {p + "_pre", {{blocks(static_cast<int64_t>(c.input_w) * c.input_h), b, 1}, block, 0}};
  s.decode = {p + "_decode", {{blocks(rows), b, 1}, block, 0}};
  s.rank = {p + "_rank", {{blocks(cap), b, 1}, block, 0}};
  s.nms = {p + "_nms", {{b, 1, 1}, block, 0}};
  return k;
}

}  // namespace yoloc::codegen::cuda
