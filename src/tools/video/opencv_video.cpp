// Video support through OpenCV's videoio (which decodes through FFmpeg's libav*).
#include <cstring>
#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>

#include "core/error.h"
#include "tools/video/video.h"

namespace yoloc::tools {

namespace {

class CvReader : public VideoReader {
 public:
  explicit CvReader(const std::string& path) : path_(path), cap_(path) {
    if (!cap_.isOpened())
      user_error("cannot open the video '{}' (not a video, or a codec this OpenCV lacks)", path);
  }
  bool next(detect::Image& frame) override {
    cv::Mat m;
    if (!cap_.read(m) || m.empty()) return false;
    if (m.type() != CV_8UC3)
      user_error("the video '{}' has frames of OpenCV type {}; expected 8-bit BGR", path_,
                 m.type());
    frame = detect::Image(m.cols, m.rows);
    for (int y = 0; y < m.rows; ++y)
      std::memcpy(frame.pixel(0, y), m.ptr<uint8_t>(y), static_cast<size_t>(m.cols) * 3);
    return true;
  }
  double fps() const override {
    const double f = cap_.get(cv::CAP_PROP_FPS);
    return f > 0 && f < 1000 ? f : 25.0;
  }

 private:
  std::string path_;
  mutable cv::VideoCapture cap_;
};

class CvWriter : public VideoWriter {
 public:
  CvWriter(const std::string& path, int width, int height, double fps)
      : path_(path), width_(width), height_(height),
        out_(path, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), fps, cv::Size(width, height)) {
    if (!out_.isOpened()) user_error("--draw: cannot write the video '{}'", path);
  }
  void write(const detect::Image& frame) override {
    if (frame.width != width_ || frame.height != height_)
      user_error("the video '{}' changes its frame size mid-stream ({}x{} after {}x{})", path_,
                 frame.width, frame.height, width_, height_);
    cv::Mat m(frame.height, frame.width, CV_8UC3, const_cast<uint8_t*>(frame.bgr.data()));
    out_.write(m);
  }

 private:
  std::string path_;
  int width_, height_;
  cv::VideoWriter out_;
};

}  // namespace

bool video_supported() { return true; }

std::unique_ptr<VideoReader> open_video(const std::string& path) {
  return std::make_unique<CvReader>(path);
}

std::unique_ptr<VideoWriter> create_video(const std::string& path, int width, int height,
                                          double fps) {
  return std::make_unique<CvWriter>(path, width, height, fps);
}

}  // namespace yoloc::tools
