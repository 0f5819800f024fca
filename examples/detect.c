/* Detects objects in an image with a compiled artifact and prints them as JSON, through the C
   API of libyoloc_runtime.
     detect_c MODEL.ycm IMAGE */
#include <stdio.h>

#include <yoloc/yoloc.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.ycm IMAGE\n", argv[0]);
    return 2;
  }
  yoloc_detector* detector = NULL;
  yoloc_detection* dets = NULL;
  size_t n = 0;
  if (yoloc_detector_load(argv[1], NULL, &detector) != YOLOC_OK ||
      yoloc_detect_file(detector, argv[2], &dets, &n) != YOLOC_OK) {
    fprintf(stderr, "error: %s\n", yoloc_last_error());
    yoloc_detector_free(detector);
    return 1;
  }
  printf("[");
  for (size_t i = 0; i < n; ++i)
    printf("%s{\"class_name\": \"%s\", \"class_id\": %d, \"score\": %.4f, "
           "\"box\": [%.1f, %.1f, %.1f, %.1f]}",
           i ? ", " : "", dets[i].class_name, dets[i].class_id, dets[i].score, dets[i].x1,
           dets[i].y1, dets[i].x2, dets[i].y2);
  printf("]\n");
  yoloc_detections_free(dets);
  yoloc_detector_free(detector);
  return 0;
}
