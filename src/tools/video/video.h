#pragma once
/// Video files for `yoloc run`: frames in, annotated frames out. Built over OpenCV's videoio
/// when CMake finds it (opencv_video.cpp); otherwise every call raises a UserError saying this
/// build has no video support (no_video.cpp).
#include <memory>
#include <string>

#include "yoloc/image.h"

namespace yoloc::tools {

/// Whether this build reads and writes videos.
bool video_supported();

class VideoReader {
 public:
  virtual ~VideoReader() = default;
  /// The next frame (BGR) into `frame`; false at the end of the video.
  virtual bool next(detect::Image& frame) = 0;
  /// Frames per second as the file says (25 when it does not).
  virtual double fps() const = 0;
};

class VideoWriter {
 public:
  virtual ~VideoWriter() = default;
  /// Appends a frame of the writer's size.
  virtual void write(const detect::Image& frame) = 0;
};

/// Opens a video file; a UserError naming it when it cannot be opened or decoded.
std::unique_ptr<VideoReader> open_video(const std::string& path);

/// Creates an MPEG-4 (.mp4, 'mp4v') video of width x height at `fps`; a UserError naming the
/// path when it cannot be written.
std::unique_ptr<VideoWriter> create_video(const std::string& path, int width, int height,
                                          double fps);

}  // namespace yoloc::tools
