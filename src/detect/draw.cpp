#include "detect/draw.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "detect/pipeline.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_easy_font.h>
#pragma GCC diagnostic pop

namespace yoloc::detect {

namespace {

/// Ultralytics' palette, as RGB hex.
constexpr uint32_t kPalette[] = {0x042AFF, 0x0BDBEB, 0xF3F3F3, 0x00DFB7, 0x111F68,
                                 0xFF6FDD, 0xFF444F, 0xCCED00, 0x00F344, 0xBD00FF,
                                 0x00B4FF, 0xDD00BA, 0x00FFFF, 0x26C000, 0x01FFB3,
                                 0x7D24FF, 0x7B0068, 0xFF1B6C, 0xFC6D2F, 0xA2FF0B};

// stb_easy_font glyphs: caps are 7 units tall (descenders reach 9).
constexpr int kGlyphHeight = 9;

using Colour = std::array<uint8_t, 3>;

/// Fills [x0, x1) x [y0, y1), clipped to the image.
void fill_rect(Image& img, int x0, int y0, int x1, int y1, const Colour& c) {
  x0 = std::clamp(x0, 0, img.width);
  x1 = std::clamp(x1, 0, img.width);
  y0 = std::clamp(y0, 0, img.height);
  y1 = std::clamp(y1, 0, img.height);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      uint8_t* p = img.pixel(x, y);
      p[0] = c[0], p[1] = c[1], p[2] = c[2];
    }
}

/// Rasterises `text` with its top-left at (x, y), each font unit `scale` pixels.
void draw_text(Image& img, int x, int y, const std::string& text, int scale, const Colour& c) {
  std::string buf = text;
  std::vector<char> vertices(64 * 16 * (text.size() + 1));  // 16 bytes a vertex, 4 per quad
  unsigned char rgba[4] = {255, 255, 255, 255};
  const int quads = stb_easy_font_print(0, 0, buf.data(), rgba, vertices.data(),
                                        static_cast<int>(vertices.size()));
  for (int q = 0; q < quads; ++q) {
    const float* v0 = reinterpret_cast<const float*>(vertices.data() + q * 64);
    const float* v2 = reinterpret_cast<const float*>(vertices.data() + q * 64 + 32);
    fill_rect(img, x + static_cast<int>(v0[0]) * scale, y + static_cast<int>(v0[1]) * scale,
              x + static_cast<int>(v2[0]) * scale, y + static_cast<int>(v2[1]) * scale, c);
  }
}

/// A box coordinate as an int; far-off (or NaN) coordinates are clamped so that the int
/// conversion stays defined, the drawing clips them anyway.
int pixel_coord(float v) {
  if (!(v > -1e6f)) return -1000000;
  return static_cast<int>(std::min(v, 1e6f));
}

}  // namespace

Colour class_colour(int class_id) {
  const size_t n = std::size(kPalette);
  const uint32_t rgb = kPalette[static_cast<size_t>(class_id < 0 ? -(class_id + 1) : class_id) % n];
  return {static_cast<uint8_t>(rgb & 0xff), static_cast<uint8_t>((rgb >> 8) & 0xff),
          static_cast<uint8_t>(rgb >> 16)};
}

void draw_detections(Image& img, const std::vector<Detection>& dets,
                     const std::vector<std::string>& names) {
  // Line width and font scale follow the image size, as Ultralytics' annotator does.
  const int lw = std::max(static_cast<int>(std::lround((img.width + img.height) / 2.0 * 0.003)), 2);
  const int scale = std::max(lw - 1, 1);
  const int pad = scale * 2;
  // Lowest score first, so that the best boxes and labels end up on top.
  std::vector<const Detection*> order;
  for (const Detection& d : dets) order.push_back(&d);
  std::stable_sort(order.begin(), order.end(),
                   [](const Detection* a, const Detection* b) { return a->score < b->score; });
  for (const Detection* d : order) {
    const Colour c = class_colour(d->class_id);
    const int x1 = pixel_coord(std::floor(d->box.x1)), y1 = pixel_coord(std::floor(d->box.y1));
    const int x2 = pixel_coord(std::ceil(d->box.x2)), y2 = pixel_coord(std::ceil(d->box.y2));
    fill_rect(img, x1, y1, x2, y1 + lw, c);
    fill_rect(img, x1, y2 - lw, x2, y2, c);
    fill_rect(img, x1, y1, x1 + lw, y2, c);
    fill_rect(img, x2 - lw, y1, x2, y2, c);

    const std::string label = class_name(names, d->class_id) + " " +
                              fmt::format("{:.2f}", d->score);
    std::string buf = label;
    const int text_w = stb_easy_font_width(buf.data()) * scale;
    const int box_w = text_w + 2 * pad, box_h = kGlyphHeight * scale + 2 * pad;
    // Above the box when it fits, else just inside its top edge; kept inside the image.
    int ly = y1 - box_h >= 0 ? y1 - box_h : y1;
    ly = std::clamp(ly, 0, std::max(img.height - box_h, 0));
    const int lx = std::clamp(x1, 0, std::max(img.width - box_w, 0));
    fill_rect(img, lx, ly, lx + box_w, ly + box_h, c);
    // Dark text on light colours, white on dark ones (Rec. 601 luma of the B, G, R colour).
    const double luma = 0.114 * c[0] + 0.587 * c[1] + 0.299 * c[2];
    const Colour text = luma > 150 ? Colour{0, 0, 0} : Colour{255, 255, 255};
    draw_text(img, lx + pad, ly + pad + scale, label, scale, text);
  }
}

}  // namespace yoloc::detect
