#ifndef YOLOC_YOLOC_H_
#define YOLOC_YOLOC_H_
/// The yoloc runtime's C API: load a compiled `.ycm` detector and run it on images. No function
/// throws; each returns a yoloc_status, and after a failure yoloc_last_error() gives the message
/// (per thread). Link with libyoloc_runtime.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum yoloc_status {
  YOLOC_OK = 0,
  YOLOC_ERROR_INVALID_ARGUMENT = 1,  ///< a null pointer, bad size or bad option
  YOLOC_ERROR_NOT_FOUND = 2,         ///< the artifact or image file does not exist
  YOLOC_ERROR_BAD_ARTIFACT = 3,      ///< corrupt, tampered, unsigned, incompatible artifact
  YOLOC_ERROR_BAD_IMAGE = 4,         ///< the image cannot be decoded
  YOLOC_ERROR_RUNTIME = 5,           ///< the model cannot run this request
  YOLOC_ERROR_OUT_OF_MEMORY = 6,
  YOLOC_ERROR_INTERNAL = 7,          ///< a bug in yoloc: please report it with the message
} yoloc_status;

/// An opaque loaded detector.
typedef struct yoloc_detector yoloc_detector;

/// Load options; start from yoloc_options_init().
typedef struct yoloc_options {
  int threads;                  ///< 0: the machine's hardware threads
  float conf;                   ///< score threshold; < 0: the artifact's default
  float iou;                    ///< NMS IoU threshold; < 0: the artifact's default
  int max_det;                  ///< most detections per image; <= 0: the artifact's default
  /// NULL, or a public key file (yoloc keygen's NAME.pub) the artifact must be signed with;
  /// "" is an error (YOLOC_ERROR_INVALID_ARGUMENT), never "no key".
  const char* public_key_file;
  int device;                   ///< the GPU running a CUDA artifact (0: the first)
  int in_flight;                ///< images a CUDA detector works on at once (yoloc_submit_rgb)
  /// NULL, or more trusted public key files separated by ':' ("" is an error). With any key
  /// here, in public_key_file or in the environment variable YOLOC_TRUSTED_KEYS, only an
  /// artifact signed by one of them loads (YOLOC_ERROR_BAD_ARTIFACT otherwise).
  const char* trusted_keys;
  /// Nonzero: refuse to load unless some key is trusted (an unsigned artifact is code).
  int require_signature;
  /// The most arena bytes a CPU artifact may ask for (0: half of this machine's memory).
  uint64_t max_memory;
} yoloc_options;

/// One detection, box corners in image pixels.
typedef struct yoloc_detection {
  float x1, y1, x2, y2;
  float score;
  int class_id;
  const char* class_name;  ///< owned by the detector: valid until yoloc_detector_free
} yoloc_detection;

/// Fills `options` with the defaults (every field "from the artifact").
void yoloc_options_init(yoloc_options* options);

/// Loads the artifact at `path` into `*out` (options may be NULL). On failure `*out` is NULL.
yoloc_status yoloc_detector_load(const char* path, const yoloc_options* options,
                                 yoloc_detector** out);
/// Frees a detector (NULL is fine).
void yoloc_detector_free(yoloc_detector* detector);

/// Detects objects in an image file (JPEG, PNG, BMP, ...). On success `*detections` holds
/// `*count` entries by score descending, to be freed with yoloc_detections_free (NULL when
/// none); on failure they are NULL and 0.
yoloc_status yoloc_detect_file(yoloc_detector* detector, const char* image_path,
                               yoloc_detection** detections, size_t* count);
/// The same for an 8-bit RGB image in memory: `height` rows of `stride` bytes (>= 3 * width).
yoloc_status yoloc_detect_rgb(yoloc_detector* detector, const uint8_t* rgb, int width,
                              int height, int stride, yoloc_detection** detections,
                              size_t* count);
/// Pipelined detection: starts detecting an RGB image (as yoloc_detect_rgb takes it) and returns
/// at once with `*ticket` (the buffer may be reused as soon as the call returns); yoloc_wait
/// returns the ticket's detections as yoloc_detect_rgb would. On a CUDA artifact up to
/// options.in_flight images run concurrently, each on its own stream (a submit beyond that first
/// finishes the oldest); on the CPU the detection runs inside yoloc_submit_rgb.
yoloc_status yoloc_submit_rgb(yoloc_detector* detector, const uint8_t* rgb, int width,
                              int height, int stride, uint64_t* ticket);
/// Waits for `ticket`'s detections (YOLOC_ERROR_RUNTIME for a ticket never given or already
/// waited for); outputs as yoloc_detect_rgb's.
yoloc_status yoloc_wait(yoloc_detector* detector, uint64_t ticket, yoloc_detection** detections,
                        size_t* count);
/// Frees what a detect or wait call returned (NULL is fine).
void yoloc_detections_free(yoloc_detection* detections);

/// The message of the calling thread's last failure ("" when none); valid until its next call.
const char* yoloc_last_error(void);
/// A constant name for `status`, e.g. "YOLOC_ERROR_NOT_FOUND".
const char* yoloc_status_name(yoloc_status status);

#ifdef __cplusplus
}
#endif

#endif  // YOLOC_YOLOC_H_
