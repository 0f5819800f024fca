#pragma once
/// What `yoloc run` reads: its arguments (image files, video files, folders, globs) expanded
/// into a list of files, each an image or a video.
#include <string>
#include <vector>

namespace yoloc::tools {

struct RunInput {
  std::string path;
  bool video = false;  ///< by its extension (.mp4, .avi, .mov, .mkv, .webm, .m4v, .mpg, .mpeg)
};

/// Expands `args` in order: a file is taken as it is (an image unless its extension is a
/// video's); a folder gives its image and video files (by extension, sorted by name, not
/// recursive); anything else with *, ? or [ is a glob (matches sorted). Raises a UserError for
/// a path that does not exist, a folder with no image or video, or a glob that matches nothing.
std::vector<RunInput> expand_run_inputs(const std::vector<std::string>& args);

}  // namespace yoloc::tools
