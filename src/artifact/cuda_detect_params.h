#pragma once
/// The data the GPU pre- and post-processing kernels share with the host, as plain structs that
/// both sides compile from one definition (an interface of the artifact's detection module, as
/// include/yoloc/kernel_abi.h is of the CPU kernels): the host includes this header, the kernel
/// source (NVRTC includes nothing) embeds kDetectParamsSource, the same text. Include-free.
///
/// One device buffer of params per inference, written by the host into pinned memory and copied
/// up by the captured graph, so one graph serves every frame size:
///   YcDetectParams at byte 0, then YcImageParams[batch] at byte sizeof(YcDetectParams).
/// The result buffer (downloaded by the graph):
///   int count[batch] (padded to 16 bytes), then YcDetection[batch][max_det_cap].
///
/// YcImageParams: where frame b lies in the frame buffer (byte offset of its top-left pixel, its
/// size and row pitch in bytes; 8-bit BGR, 3 bytes a pixel), the size it is resized to and where
/// the resized image is pasted in the network input (Ultralytics letterbox: centred; YOLOX: 0, 0).
/// YcDetectParams: score threshold, NMS IoU threshold, detections kept per image
/// (<= the kernels' max_det_cap). YcDetection: a box in network-input pixels.

// The definitions, once, as a macro: expanded here for the host and stringified for the kernels.
#define YOLOC_DETECT_PARAMS_DEFINITION \
  struct YcImageParams {               \
    long long src_offset;              \
    int src_w;                         \
    int src_h;                         \
    int src_pitch;                     \
    int new_w;                         \
    int new_h;                         \
    int left;                          \
    int top;                           \
    int reserved;                      \
  };                                   \
  struct YcDetectParams {              \
    float conf;                        \
    float iou;                         \
    int max_det;                       \
    int reserved;                      \
  };                                   \
  struct YcDetection {                 \
    float x1;                          \
    float y1;                          \
    float x2;                          \
    float y2;                          \
    float score;                       \
    int class_id;                      \
  };

namespace yoloc::artifact::cuda {

YOLOC_DETECT_PARAMS_DEFINITION

}  // namespace yoloc::artifact::cuda

#define YOLOC_DETECT_PARAMS_STR2(...) #__VA_ARGS__
#define YOLOC_DETECT_PARAMS_STR(...) YOLOC_DETECT_PARAMS_STR2(__VA_ARGS__)

namespace yoloc::artifact::cuda {

/// The definitions above as source text for the kernels.
inline constexpr const char* kDetectParamsSource =
    YOLOC_DETECT_PARAMS_STR(YOLOC_DETECT_PARAMS_DEFINITION);

static_assert(sizeof(YcImageParams) == 40 && alignof(YcImageParams) == 8);
static_assert(sizeof(YcDetectParams) == 16 && sizeof(YcDetectParams) % alignof(YcImageParams) == 0);
static_assert(sizeof(YcDetection) == 24);

}  // namespace yoloc::artifact::cuda
