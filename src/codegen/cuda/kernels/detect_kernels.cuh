
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
