
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
