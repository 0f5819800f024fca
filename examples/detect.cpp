// Detects objects in an image with a compiled artifact and prints them as JSON, through the C++
// API of libyoloc_runtime (yoloc/runtime.h).
//   detect_cpp MODEL.ycm IMAGE
#include <yoloc/runtime.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL.ycm IMAGE\n", argv[0]);
    return 2;
  }
  try {
    const yoloc::Detector detector = yoloc::Detector::load(argv[1]);
    const yoloc::Image image = yoloc::detect::read_image(argv[2]);
    const std::vector<yoloc::Detection> dets = detector.detect(image);
    const std::vector<std::string>& names = detector.class_names();
    std::printf("[");
    for (size_t i = 0; i < dets.size(); ++i) {
      const yoloc::Detection& d = dets[i];
      const size_t c = static_cast<size_t>(d.class_id);
      std::printf("%s{\"class_name\": \"%s\", \"class_id\": %d, \"score\": %.4f, "
                  "\"box\": [%.1f, %.1f, %.1f, %.1f]}",
                  i ? ", " : "", c < names.size() ? names[c].c_str() : "", d.class_id, d.score,
                  d.box.x1, d.box.y1, d.box.x2, d.box.y2);
    }
    std::printf("]\n");
  } catch (const yoloc::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
