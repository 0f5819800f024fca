#include "detect/family.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/error.h"
#include "detect/coco_names.h"

namespace yoloc::detect {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const std::string* find(const Metadata& md, const std::string& key) {
  auto it = md.find(key);
  return it == md.end() ? nullptr : &it->second;
}

bool contains(const std::string* value, std::string_view needle) {
  return value != nullptr && lower(*value).find(needle) != std::string::npos;
}

/// A tiny reader for the Python literals Ultralytics writes with str(): ints, quoted strings,
/// separators. Every read raises a UserError naming the literal on malformed input.
class LiteralReader {
 public:
  explicit LiteralReader(const std::string& text) : s_(text) {}

  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  /// Consumes `c` if it is next (after spaces).
  bool accept(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("'{}'", c));
  }
  int64_t integer() {
    skip_space();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (ec != std::errc()) fail("an integer");
    pos_ = static_cast<size_t>(p - s_.data());
    return v;
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("a quoted string");
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) fail("a closing quote");
    ++pos_;
    return out;
  }
  [[noreturn]] void fail(const std::string& expected) const {
    user_error("model metadata: cannot parse '{}': expected {} at offset {}", s_, expected, pos_);
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

std::string_view family_name(Family f) {
  switch (f) {
    case Family::kYoloV5: return "yolov5";
    case Family::kYoloV8: return "yolov8";
    case Family::kYoloV10: return "yolov10";
    case Family::kYoloX: return "yolox";
  }
  internal_error("bad Family {}", static_cast<int>(f));
}

Family parse_family(std::string_view name) {
  const std::string n = lower(name);
  if (n == "yolov5") return Family::kYoloV5;
  if (n == "yolov8" || n == "yolo11" || n == "yolov11") return Family::kYoloV8;
  if (n == "yolov10") return Family::kYoloV10;
  if (n == "yolox") return Family::kYoloX;
  user_error("unknown model family '{}': expected yolov5, yolov8, yolo11, yolov10 or yolox",
             name);
}

std::optional<Family> try_detect_family(const Metadata& md, const Shape& out) {
  const std::string* task = find(md, "task");
  if (task != nullptr && lower(*task) != "detect")
    user_error("the model's task is '{}'; yoloc runs detection models only (task 'detect')",
               *task);
  const bool ultralytics = contains(find(md, "author"), "ultralytics") ||
                           contains(find(md, "description"), "ultralytics");
  const bool rank3 = out.size() == 3;
  const int64_t d1 = rank3 ? out[1] : -1, d2 = rank3 ? out[2] : -1;
  if (ultralytics) {
    if (contains(find(md, "end2end"), "true") || contains(find(md, "head"), "v10") ||
        contains(find(md, "description"), "yolov10"))
      return Family::kYoloV10;
    return Family::kYoloV8;
  }
  // The yolov5 repository's export writes only "stride" and "names"; its head is
  // (B, anchors, 5 + C), anchors-major, unlike the channel-major v8 head.
  if (find(md, "stride") != nullptr && find(md, "names") != nullptr && d1 > 0 && d2 > 0)
    return d1 > d2 ? Family::kYoloV5 : Family::kYoloV8;
  return std::nullopt;
}

Family detect_family(const Metadata& md, const Shape& out) {
  if (const std::optional<Family> f = try_detect_family(md, out)) return *f;
  user_error("cannot tell the model family from the model: it has no Ultralytics metadata "
             "(output shape {}); YOLOv5 and YOLOX exports look alike. Pass "
             "--family yolov5|yolov8|yolov10|yolox",
             shape_str(out));
}

std::vector<std::string> parse_names(const std::string& literal) {
  LiteralReader r(literal);
  std::vector<std::string> names;
  if (r.accept('[')) {
    if (!r.accept(']')) {
      do names.push_back(r.quoted());
      while (r.accept(','));
      r.expect(']');
    }
  } else {
    r.expect('{');
    std::map<int64_t, std::string> by_id;
    while (!r.accept('}')) {
      const int64_t id = r.integer();
      r.expect(':');
      if (!by_id.emplace(id, r.quoted()).second)
        user_error("model metadata names: class {} appears twice in '{}'", id, literal);
      if (!r.accept(',')) {
        r.expect('}');
        break;
      }
    }
    if (!by_id.empty() && (by_id.begin()->first != 0 ||
                           by_id.rbegin()->first != static_cast<int64_t>(by_id.size()) - 1))
      user_error("model metadata names: expected class ids 0..{}, got ids {}..{} in '{}'",
                 by_id.size() - 1, by_id.begin()->first, by_id.rbegin()->first, literal);
    for (auto& [id, name] : by_id) names.push_back(std::move(name));
  }
  if (!r.at_end()) r.fail("the end of the literal");
  return names;
}

std::vector<std::string> class_names(const Metadata& md, int64_t num_classes) {
  if (const std::string* v = find(md, "names")) return parse_names(*v);
  if (num_classes < 0 || num_classes == static_cast<int64_t>(coco_names().size()))
    return coco_names();
  std::vector<std::string> names;
  for (int64_t i = 0; i < num_classes; ++i) names.push_back(fmt::format("class{}", i));
  return names;
}

std::optional<std::pair<int, int>> metadata_imgsz(const Metadata& md) {
  const std::string* v = find(md, "imgsz");
  if (v == nullptr) return std::nullopt;
  std::vector<int64_t> sizes;
  try {
    LiteralReader r(*v);
    const bool list = r.accept('[') || r.accept('(');
    do sizes.push_back(r.integer());
    while (list && r.accept(','));
    if (list && !r.accept(']')) r.expect(')');
    if (!r.at_end()) return std::nullopt;
  } catch (const UserError&) {
    return std::nullopt;
  }
  if (sizes.empty() || sizes.size() > 2) return std::nullopt;
  const int64_t h = sizes[0], w = sizes.size() == 2 ? sizes[1] : sizes[0];
  if (h <= 0 || w <= 0 || h > 65536 || w > 65536) return std::nullopt;
  return std::make_pair(static_cast<int>(h), static_cast<int>(w));
}

}  // namespace yoloc::detect
