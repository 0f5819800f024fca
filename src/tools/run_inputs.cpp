#include "tools/run_inputs.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"

namespace yoloc::tools {

namespace {

namespace fs = std::filesystem;

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

bool is_video(const fs::path& p) {
  static const char* const kVideo[] = {".mp4", ".avi", ".mov", ".mkv",
                                       ".webm", ".m4v", ".mpg", ".mpeg"};
  const std::string ext = lower_extension(p);
  return std::any_of(std::begin(kVideo), std::end(kVideo), [&](const char* v) { return ext == v; });
}

bool is_image(const fs::path& p) {
  static const char* const kImage[] = {".jpg", ".jpeg", ".png", ".bmp", ".gif",
                                       ".tga", ".pnm", ".ppm", ".pgm"};
  const std::string ext = lower_extension(p);
  return std::any_of(std::begin(kImage), std::end(kImage), [&](const char* v) { return ext == v; });
}

std::vector<RunInput> folder_inputs(const std::string& dir) {
  std::vector<RunInput> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || !(is_image(e.path()) || is_video(e.path()))) continue;
    out.push_back({e.path().string(), is_video(e.path())});
  }
  if (ec) user_error("cannot list the folder '{}': {}", dir, ec.message());
  if (out.empty())
    user_error("the folder '{}' holds no image (.jpg, .png, .bmp, ...) or video (.mp4, ...)",
               dir);
  std::sort(out.begin(), out.end(),
            [](const RunInput& a, const RunInput& b) { return a.path < b.path; });
  return out;
}

std::vector<RunInput> glob_inputs(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<RunInput> out;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      const fs::path p = g.gl_pathv[i];
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) out.push_back({p.string(), is_video(p)});
    }
  }
  globfree(&g);
  if (out.empty()) user_error("no file matches '{}'", pattern);
  return out;  // glob() sorts its matches
}

}  // namespace

std::vector<RunInput> expand_run_inputs(const std::vector<std::string>& args) {
  std::vector<RunInput> out;
  for (const std::string& a : args) {
    std::error_code ec;
    std::vector<RunInput> more;
    if (fs::is_directory(a, ec)) {
      more = folder_inputs(a);
    } else if (fs::exists(a, ec)) {
      more = {{a, is_video(a)}};
    } else if (a.find_first_of("*?[") != std::string::npos) {
      more = glob_inputs(a);
    } else {
      user_error("'{}' does not exist (give image or video files, folders or globs)", a);
    }
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace yoloc::tools
