/* Compiled as C and linked against libyoloc_runtime alone: the C header is valid C and the
   runtime library needs nothing of the compiler. Usage: c_api_link <missing-artifact-path> */
#include <stdio.h>
#include <string.h>

#include "yoloc/yoloc.h"

int main(int argc, char** argv) {
  yoloc_detector* d = NULL;
  if (argc != 2) return 2;
  yoloc_status s = yoloc_detector_load(argv[1], NULL, &d);
  if (s != YOLOC_ERROR_NOT_FOUND || d != NULL || strstr(yoloc_last_error(), argv[1]) == NULL) {
    fprintf(stderr, "unexpected: %s: %s\n", yoloc_status_name(s), yoloc_last_error());
    return 1;
  }
  printf("ok: %s: %s\n", yoloc_status_name(s), yoloc_last_error());
  return 0;
}
