// The C API over yoloc::Detector: every exception becomes a status plus a per-thread message.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

#include "yoloc/runtime.h"
#include "yoloc/yoloc.h"
#include "core/error.h"

struct yoloc_detector {
  yoloc::Detector detector;
};

namespace {

thread_local std::string g_last_error;

yoloc_status fail(yoloc_status status, std::string message) {
  g_last_error = std::move(message);
  return status;
}

/// Runs `fn`, mapping a UserError to `user_status` and anything else to its own status.
template <typename F>
yoloc_status guarded(yoloc_status user_status, F&& fn) {
  try {
    g_last_error.clear();
    fn();
    return YOLOC_OK;
  } catch (const yoloc::UserError& e) {
    return fail(user_status, e.what());
  } catch (const std::bad_alloc&) {
    return fail(YOLOC_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(YOLOC_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(YOLOC_ERROR_INTERNAL, "unknown exception");
  }
}

bool file_exists(const char* path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

/// Hands detections over as a malloc'ed C array (NULL and 0 when none).
void to_c_array(const yoloc_detector* d, const std::vector<yoloc::detect::Detection>& dets,
                yoloc_detection** out, size_t* count) {
    if (dets.empty()) return;
    auto* arr = static_cast<yoloc_detection*>(std::malloc(dets.size() * sizeof(yoloc_detection)));
    if (!arr) throw std::bad_alloc();
    const std::vector<std::string>& names = d->detector.class_names();
    for (size_t i = 0; i < dets.size(); ++i) {
      const yoloc::detect::Detection& s = dets[i];
      const bool named = s.class_id >= 0 && static_cast<size_t>(s.class_id) < names.size();
      arr[i] = {s.box.x1,
                s.box.y1,
                s.box.x2,
                s.box.y2,
                s.score,
                s.class_id,
                named ? names[static_cast<size_t>(s.class_id)].c_str() : ""};
    }
    *out = arr;
    *count = dets.size();
}

/// Runs the detector and hands the result over as a malloc'ed C array.
yoloc_status detect_into(yoloc_detector* d, const yoloc::detect::Image& img, yoloc_detection** out,
                         size_t* count) {
  return guarded(YOLOC_ERROR_RUNTIME, [&] { to_c_array(d, d->detector.detect(img), out, count); });
}

/// The BGR image of an 8-bit RGB buffer; a UserError for impossible geometry.
yoloc::detect::Image bgr_of_rgb(const uint8_t* rgb, int width, int height, int stride) {
  if (width <= 0 || height <= 0 || width > (1 << 15) || height > (1 << 15) || stride < 3 * width)
    yoloc::user_error(
        "the image must be 1..32768 pixels wide and high with a stride of at least 3 * width; got "
        "{}x{}, stride {}",
        width, height, stride);
  yoloc::detect::Image img(width, height);
  for (int y = 0; y < height; ++y) {
    const uint8_t* src = rgb + static_cast<size_t>(y) * static_cast<size_t>(stride);
    for (int x = 0; x < width; ++x) {
      uint8_t* px = img.pixel(x, y);
      px[0] = src[3 * x + 2];
      px[1] = src[3 * x + 1];
      px[2] = src[3 * x];
    }
  }
  return img;
}

bool check_outputs(yoloc_detector* d, yoloc_detection** out, size_t* count) {
  if (out) *out = nullptr;
  if (count) *count = 0;
  return d && out && count;
}

}  // namespace

extern "C" {

void yoloc_options_init(yoloc_options* o) {
  if (o) *o = {0, -1.0f, -1.0f, 0, nullptr, 0, 2, nullptr, 0, 0};
}

yoloc_status yoloc_detector_load(const char* path, const yoloc_options* options,
                                 yoloc_detector** out) {
  if (out) *out = nullptr;
  if (!path || !out) return fail(YOLOC_ERROR_INVALID_ARGUMENT, "path and out must not be NULL");
  if (!file_exists(path))
    return fail(YOLOC_ERROR_NOT_FOUND, std::string("the artifact '") + path + "' does not exist");
  yoloc::DetectorOptions opts;
  if (options) {
    if (options->threads < 0 || options->device < 0 || options->conf > 1 || options->iou > 1 ||
        options->in_flight < 1)
      return fail(YOLOC_ERROR_INVALID_ARGUMENT,
                  "options: threads and device must be >= 0, in_flight >= 1, conf and iou at "
                  "most 1");
    opts.threads = options->threads;
    opts.device = options->device;
    opts.in_flight = options->in_flight;
    if (options->conf >= 0) opts.conf = options->conf;
    if (options->iou >= 0) opts.iou = options->iou;
    if (options->max_det > 0) opts.max_det = options->max_det;
    if ((options->public_key_file && !*options->public_key_file) ||
        (options->trusted_keys && !*options->trusted_keys))
      return fail(YOLOC_ERROR_INVALID_ARGUMENT,
                  "options: public_key_file and trusted_keys must be NULL or name key files; an "
                  "empty string is not \"no key\"");
    if (options->public_key_file) opts.trusted_keys.push_back(options->public_key_file);
    if (options->trusted_keys) {
      const std::string list = options->trusted_keys;
      for (size_t begin = 0; begin <= list.size();) {
        const size_t end = std::min(list.find(':', begin), list.size());
        if (end == begin)
          return fail(YOLOC_ERROR_INVALID_ARGUMENT,
                      "options: trusted_keys has an empty entry; separate key files by one ':'");
        opts.trusted_keys.push_back(list.substr(begin, end - begin));
        begin = end + 1;
      }
    }
    opts.require_signature = options->require_signature != 0;
    opts.max_memory = options->max_memory;
  }
  return guarded(YOLOC_ERROR_BAD_ARTIFACT,
                 [&] { *out = new yoloc_detector{yoloc::Detector::load(path, opts)}; });
}

void yoloc_detector_free(yoloc_detector* detector) { delete detector; }

yoloc_status yoloc_detect_file(yoloc_detector* detector, const char* image_path,
                               yoloc_detection** detections, size_t* count) {
  if (!check_outputs(detector, detections, count) || !image_path)
    return fail(YOLOC_ERROR_INVALID_ARGUMENT, "detector, image_path and outputs must not be NULL");
  if (!file_exists(image_path))
    return fail(YOLOC_ERROR_NOT_FOUND,
                std::string("the image '") + image_path + "' does not exist");
  yoloc::detect::Image img;
  const yoloc_status s =
      guarded(YOLOC_ERROR_BAD_IMAGE, [&] { img = yoloc::detect::read_image(image_path); });
  return s != YOLOC_OK ? s : detect_into(detector, img, detections, count);
}

yoloc_status yoloc_detect_rgb(yoloc_detector* detector, const uint8_t* rgb, int width, int height,
                              int stride, yoloc_detection** detections, size_t* count) {
  if (!check_outputs(detector, detections, count) || !rgb)
    return fail(YOLOC_ERROR_INVALID_ARGUMENT, "detector, rgb and outputs must not be NULL");
  yoloc::detect::Image img;
  const yoloc_status s =
      guarded(YOLOC_ERROR_BAD_IMAGE, [&] { img = bgr_of_rgb(rgb, width, height, stride); });
  return s != YOLOC_OK ? s : detect_into(detector, img, detections, count);
}

yoloc_status yoloc_submit_rgb(yoloc_detector* detector, const uint8_t* rgb, int width,
                              int height, int stride, uint64_t* ticket) {
  if (ticket) *ticket = 0;
  if (!detector || !rgb || !ticket)
    return fail(YOLOC_ERROR_INVALID_ARGUMENT, "detector, rgb and ticket must not be NULL");
  yoloc::detect::Image img;
  const yoloc_status s =
      guarded(YOLOC_ERROR_BAD_IMAGE, [&] { img = bgr_of_rgb(rgb, width, height, stride); });
  if (s != YOLOC_OK) return s;
  return guarded(YOLOC_ERROR_RUNTIME, [&] { *ticket = detector->detector.submit(img); });
}

yoloc_status yoloc_wait(yoloc_detector* detector, uint64_t ticket, yoloc_detection** detections,
                        size_t* count) {
  if (!check_outputs(detector, detections, count))
    return fail(YOLOC_ERROR_INVALID_ARGUMENT, "detector and outputs must not be NULL");
  return guarded(YOLOC_ERROR_RUNTIME, [&] {
    to_c_array(detector, detector->detector.wait(ticket), detections, count);
  });
}

void yoloc_detections_free(yoloc_detection* detections) { std::free(detections); }

const char* yoloc_last_error(void) { return g_last_error.c_str(); }

const char* yoloc_status_name(yoloc_status status) {
  switch (status) {
    case YOLOC_OK: return "YOLOC_OK";
    case YOLOC_ERROR_INVALID_ARGUMENT: return "YOLOC_ERROR_INVALID_ARGUMENT";
    case YOLOC_ERROR_NOT_FOUND: return "YOLOC_ERROR_NOT_FOUND";
    case YOLOC_ERROR_BAD_ARTIFACT: return "YOLOC_ERROR_BAD_ARTIFACT";
    case YOLOC_ERROR_BAD_IMAGE: return "YOLOC_ERROR_BAD_IMAGE";
    case YOLOC_ERROR_RUNTIME: return "YOLOC_ERROR_RUNTIME";
    case YOLOC_ERROR_OUT_OF_MEMORY: return "YOLOC_ERROR_OUT_OF_MEMORY";
    case YOLOC_ERROR_INTERNAL: return "YOLOC_ERROR_INTERNAL";
  }
  return "YOLOC_ERROR_UNKNOWN";
}

}  // extern "C"
