// Video support of a build without OpenCV's videoio: every video is refused in one line.
#include "core/error.h"
#include "tools/video/video.h"

namespace yoloc::tools {

namespace {

[[noreturn]] void no_video(const std::string& path) {
  user_error(
      "'{}' is a video, and this yoloc build has no video support (it was built without "
      "OpenCV's videoio: apt-get install libopencv-videoio-dev, then reconfigure and rebuild)",
      path);
}

}  // namespace

bool video_supported() { return false; }

std::unique_ptr<VideoReader> open_video(const std::string& path) { no_video(path); }

std::unique_ptr<VideoWriter> create_video(const std::string& path, int, int, double) {
  no_video(path);
}

}  // namespace yoloc::tools
