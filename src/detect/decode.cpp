#include "detect/decode.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"

namespace yoloc::detect {

namespace {

constexpr int kYoloxStrides[] = {8, 16, 32};

/// The output as float32 (a copy only when it is another float type).
Tensor as_float32(const Tensor& t, Family family) {
  if (!is_float(t.dtype()))
    user_error("the {} head output has element type {}; expected a float type",
               family_name(family), dtype_name(t.dtype()));
  return t.dtype() == DType::kFloat32 ? t : t.cast(DType::kFloat32);
}

[[noreturn]] void bad_shape(Family family, const char* expected, const Tensor& t) {
  user_error("the {} head expects an output of shape {}, but the model's output is {}; if the "
             "family is wrong, pass --family yolov5|yolov8|yolov10|yolox",
             family_name(family), expected, describe(t));
}

Box from_center(float cx, float cy, float w, float h) {
  return {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
}

/// Index and value of the largest of n strided values (the first on ties, like torch.max).
std::pair<int, float> best_class(const float* p, int64_t n, int64_t stride) {
  int best = 0;
  float v = p[0];
  for (int64_t c = 1; c < n; ++c)
    if (p[c * stride] > v) v = p[c * stride], best = static_cast<int>(c);
  return {best, v};
}

std::vector<Detection> decode_v8(const Tensor& t, float conf) {
  if (t.rank() != 3 || t.dim(0) < 1 || t.dim(1) < 5) bad_shape(Family::kYoloV8, "(1, 4+C, N)", t);
  const Tensor f = as_float32(t, Family::kYoloV8);
  const int64_t rows = t.dim(1), n = t.dim(2), classes = rows - 4;
  const float* p = f.data<float>();
  std::vector<Detection> dets;
  for (int64_t i = 0; i < n; ++i) {
    auto [cls, score] = best_class(p + 4 * n + i, classes, n);
    if (!(score > conf)) continue;
    dets.push_back({from_center(p[i], p[n + i], p[2 * n + i], p[3 * n + i]), score, cls});
  }
  return dets;
}

/// v5 and YOLOX share the (B, N, 5 + C) row layout; YOLOX boxes are raw grid offsets.
std::vector<Detection> decode_rows(Family family, const Tensor& t, float conf, int input_w,
                                   int input_h) {
  if (t.rank() != 3 || t.dim(0) < 1 || t.dim(2) < 6) bad_shape(family, "(1, N, 5+C)", t);
  const Tensor f = as_float32(t, family);
  const int64_t n = t.dim(1), cols = t.dim(2), classes = cols - 5;
  const float* p = f.data<float>();
  const bool yolox = family == Family::kYoloX;
  // For YOLOX, row i belongs to grid cell (gx, gy) of stride `s`, row-major per level.
  std::vector<std::array<float, 3>> grid;  // gx, gy, stride
  if (yolox) {
    for (int s : kYoloxStrides) {
      if (input_w % s != 0 || input_h % s != 0)
        user_error("YOLOX decoding: the input size {}x{} must be a multiple of 32", input_w,
                   input_h);
      for (int gy = 0; gy < input_h / s; ++gy)
        for (int gx = 0; gx < input_w / s; ++gx)
          grid.push_back({static_cast<float>(gx), static_cast<float>(gy), static_cast<float>(s)});
    }
    if (static_cast<int64_t>(grid.size()) != n)
      user_error("YOLOX decoding: an input of {}x{} has {} grid cells at strides 8/16/32, but the "
                 "output {} has {} rows; is this a raw YOLOX head (no in-graph decoding)?",
                 input_w, input_h, grid.size(), describe(t), n);
  }
  std::vector<Detection> dets;
  for (int64_t i = 0; i < n; ++i) {
    const float* r = p + i * cols;
    auto [cls, cls_score] = best_class(r + 5, classes, 1);
    const float score = r[4] * cls_score;
    if (yolox ? !(score >= conf) : !(score > conf)) continue;
    Box b;
    if (yolox) {
      const auto& [gx, gy, s] = grid[static_cast<size_t>(i)];
      b = from_center((r[0] + gx) * s, (r[1] + gy) * s, std::exp(r[2]) * s, std::exp(r[3]) * s);
    } else {
      b = from_center(r[0], r[1], r[2], r[3]);
    }
    dets.push_back({b, score, cls});
  }
  return dets;
}

std::vector<Detection> decode_v10(const Tensor& t, float conf) {
  if (t.rank() != 3 || t.dim(0) < 1 || t.dim(2) != 6) bad_shape(Family::kYoloV10, "(1, K, 6)", t);
  const Tensor f = as_float32(t, Family::kYoloV10);
  const float* p = f.data<float>();
  std::vector<Detection> dets;
  for (int64_t i = 0; i < t.dim(1); ++i) {
    const float* r = p + i * 6;
    if (!(r[4] > conf)) continue;
    if (!(r[5] >= 0 && r[5] < 1e6f))
      user_error("the yolov10 head output row {} has class id {}; expected a non-negative id", i,
                 r[5]);
    dets.push_back({{r[0], r[1], r[2], r[3]}, r[4], static_cast<int>(r[5])});
  }
  return dets;
}

}  // namespace

float iou(const Box& a, const Box& b) {
  const float iw = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float ih = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float inter = iw * ih;
  const float area_a = std::max(0.0f, a.x2 - a.x1) * std::max(0.0f, a.y2 - a.y1);
  const float area_b = std::max(0.0f, b.x2 - b.x1) * std::max(0.0f, b.y2 - b.y1);
  const float uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0.0f;
}

std::vector<Detection> decode_head(Family family, const Tensor& output, float conf, int input_w,
                                   int input_h) {
  switch (family) {
    case Family::kYoloV8: return decode_v8(output, conf);
    case Family::kYoloV5:
    case Family::kYoloX: return decode_rows(family, output, conf, input_w, input_h);
    case Family::kYoloV10: return decode_v10(output, conf);
  }
  internal_error("bad Family {}", static_cast<int>(family));
}

void map_to_image(std::vector<Detection>& dets, const BoxTransform& t, int width, int height) {
  const auto map = [&](float v, double pad, int limit) {
    const double m = (v - pad) / t.scale;
    return static_cast<float>(std::clamp(m, 0.0, static_cast<double>(limit)));
  };
  for (Detection& d : dets) {
    d.box.x1 = map(d.box.x1, t.pad_left, width);
    d.box.x2 = map(d.box.x2, t.pad_left, width);
    d.box.y1 = map(d.box.y1, t.pad_top, height);
    d.box.y2 = map(d.box.y2, t.pad_top, height);
  }
}

}  // namespace yoloc::detect
