// The extension module yoloc._yoloc: the compiler and the runtime's Detector for the Python
// package (python/yoloc/), which adds the Ultralytics-shaped layer (sources, Results) on top.
// Arrays cross as numpy (or any DLPack host tensor); yoloc's UserError becomes yoloc.Error.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compile_binding.h"
#include "core/error.h"
#include "detect/draw.h"
#include "detect/eval.h"
#include "yoloc/image.h"
#include "yoloc/runtime.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using ImageIn = nb::ndarray<const uint8_t, nb::shape<-1, -1, 3>, nb::c_contig, nb::device::cpu>;
using HostArray = nb::ndarray<nb::device::cpu, nb::c_contig>;

/// A numpy array that owns a heap copy of `n` elements of `data`.
template <typename T>
nb::ndarray<nb::numpy, T> owned_array(const T* data, std::vector<size_t> shape) {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  T* copy = new T[n > 0 ? n : 1];
  if (n > 0) std::memcpy(copy, data, n * sizeof(T));
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::ndarray<nb::numpy, T>(copy, shape.size(), shape.data(), owner);
}

yoloc::detect::Image to_image(const ImageIn& a) {
  yoloc::detect::Image img(static_cast<int>(a.shape(1)), static_cast<int>(a.shape(0)));
  std::memcpy(img.bgr.data(), a.data(), img.bgr.size());
  return img;
}

nb::ndarray<nb::numpy, uint8_t> from_image(const yoloc::detect::Image& img) {
  return owned_array(img.bgr.data(), {static_cast<size_t>(img.height),
                                      static_cast<size_t>(img.width), 3});
}

/// Detections as an (N, 6) float32 array: x1, y1, x2, y2, score, class id.
nb::ndarray<nb::numpy, float> detections_array(const std::vector<yoloc::detect::Detection>& d) {
  std::vector<float> v;
  v.reserve(d.size() * 6);
  for (const auto& x : d)
    v.insert(v.end(), {x.box.x1, x.box.y1, x.box.x2, x.box.y2, x.score,
                       static_cast<float>(x.class_id)});
  return owned_array(v.data(), {d.size(), 6});
}

std::vector<yoloc::detect::Detection> detections_from(
    const nb::ndarray<const float, nb::shape<-1, 6>, nb::c_contig, nb::device::cpu>& a) {
  std::vector<yoloc::detect::Detection> out(a.shape(0));
  for (size_t i = 0; i < out.size(); ++i) {
    const float* r = a.data() + i * 6;
    out[i].box = {r[0], r[1], r[2], r[3]};
    out[i].score = r[4];
    out[i].class_id = static_cast<int>(r[5]);
  }
  return out;
}

yoloc::DType dtype_of_array(const HostArray& a) {
  const nb::dlpack::dtype t = a.dtype();
  if (t == nb::dtype<float>()) return yoloc::DType::kFloat32;
  if (t == nb::dtype<uint8_t>()) return yoloc::DType::kUInt8;
  if (t == nb::dtype<int8_t>()) return yoloc::DType::kInt8;
  if (t == nb::dtype<int32_t>()) return yoloc::DType::kInt32;
  if (t == nb::dtype<int64_t>()) return yoloc::DType::kInt64;
  if (t == nb::dtype<double>()) return yoloc::DType::kFloat64;
  if (t.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Float) && t.bits == 16)
    return yoloc::DType::kFloat16;
  if (t.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat) && t.bits == 16)
    return yoloc::DType::kBFloat16;
  throw yoloc::UserError("infer: an input array of an unsupported dtype (code " +
                         std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits)");
}

nb::object tensor_to_numpy(const yoloc::Tensor& t) {
  // numpy has no bfloat16: such outputs come back as float32.
  if (t.dtype() == yoloc::DType::kBFloat16) return tensor_to_numpy(t.cast(yoloc::DType::kFloat32));
  const auto* bytes = static_cast<const uint8_t*>(t.raw());
  nb::object flat = nb::cast(owned_array(bytes, {t.nbytes()}));
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  const std::string dtype = t.dtype() == yoloc::DType::kBool ? "bool"
                                                               : std::string(yoloc::dtype_name(t.dtype()));
  return flat.attr("view")(dtype).attr("reshape")(nb::tuple(nb::cast(shape)));
}

std::vector<nb::dict> tensor_infos(const std::vector<yoloc::TensorInfo>& infos) {
  std::vector<nb::dict> out;
  for (const auto& t : infos) {
    nb::dict d;
    d["name"] = t.name;
    d["dtype"] = t.dtype;
    d["shape"] = nb::tuple(nb::cast(t.shape));
    out.push_back(d);
  }
  return out;
}

}  // namespace

NB_MODULE(_yoloc, m) {
  m.doc() = "yoloc's compiler and runtime (use the yoloc package, not this module)";
  m.attr("__version__") = YOLOC_VERSION;
  static nb::exception<yoloc::UserError> error(m, "Error", PyExc_ValueError);

  m.def("read_image", [](const std::string& path) { return from_image(yoloc::detect::read_image(path)); },
        "path"_a, "Decodes an image file into an HxWx3 uint8 BGR array.");
  m.def("write_image",
        [](const std::string& path, const ImageIn& bgr) {
          yoloc::detect::write_image(path, to_image(bgr));
        },
        "path"_a, "bgr"_a, "Writes an HxWx3 uint8 BGR array as PNG, or JPEG for .jpg / .jpeg.");
  m.def("draw",
        [](const ImageIn& bgr,
           const nb::ndarray<const float, nb::shape<-1, 6>, nb::c_contig, nb::device::cpu>& boxes,
           const std::vector<std::string>& names) {
          yoloc::detect::Image img = to_image(bgr);
          yoloc::detect::draw_detections(img, detections_from(boxes), names);
          return from_image(img);
        },
        "bgr"_a, "boxes"_a, "names"_a,
        "A copy of the image with the (N, 6) detections drawn (boxes, class names, scores).");
  m.def("compile", &yoloc::python::compile_model, "model"_a, "output"_a, "target"_a,
        "precision"_a, "batch"_a, "imgsz"_a, "family"_a, "records"_a, "options"_a,
        "Compiles an ONNX detector into a .ycm artifact at `output`; returns the report.");

  nb::class_<yoloc::Detector>(m, "Detector")
      .def("__init__",
           [](yoloc::Detector* self, const std::string& path, int threads, int device,
              const std::string& key) {
             yoloc::DetectorOptions o;
             o.threads = threads;
             o.device = device;
             o.public_key_file = key;
             new (self) yoloc::Detector(yoloc::Detector::load(path, o));
           },
           "path"_a, "threads"_a = 0, "device"_a = 0, "public_key_file"_a = "")
      .def("detect",
           [](const yoloc::Detector& d, const ImageIn& bgr, float conf, float iou, int max_det) {
             const yoloc::detect::Image img = to_image(bgr);
             yoloc::DetectTimings t;
             std::vector<yoloc::detect::Detection> dets;
             {
               nb::gil_scoped_release release;
               dets = d.detect(img, yoloc::DetectParams{conf, iou, max_det}, &t);
             }
             return nb::make_tuple(detections_array(dets),
                                   nb::make_tuple(t.preprocess_ms, t.inference_ms,
                                                  t.postprocess_ms));
           },
           "bgr"_a, "conf"_a, "iou"_a, "max_det"_a)
      .def("detect_batch",
           [](const yoloc::Detector& d, const std::vector<ImageIn>& bgrs, float conf, float iou,
              int max_det) {
             std::vector<yoloc::detect::Image> imgs;
             for (const ImageIn& b : bgrs) imgs.push_back(to_image(b));
             yoloc::DetectTimings t;
             std::vector<std::vector<yoloc::detect::Detection>> dets;
             {
               nb::gil_scoped_release release;
               dets = d.detect(imgs, yoloc::DetectParams{conf, iou, max_det}, &t);
             }
             std::vector<nb::ndarray<nb::numpy, float>> out;
             for (const auto& x : dets) out.push_back(detections_array(x));
             return nb::make_tuple(out, nb::make_tuple(t.preprocess_ms, t.inference_ms,
                                                       t.postprocess_ms));
           },
           "bgrs"_a, "conf"_a, "iou"_a, "max_det"_a,
           "Detections of each image, batch() images a network run; stage times summed.")
      .def("infer",
           [](const yoloc::Detector& d, const std::vector<HostArray>& arrays) {
             std::vector<yoloc::Tensor> inputs;
             for (const HostArray& a : arrays) {
               yoloc::Shape shape;
               for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<int64_t>(a.shape(i)));
               yoloc::Tensor t(dtype_of_array(a), shape);
               std::memcpy(t.raw(), a.data(), t.nbytes());
               inputs.push_back(std::move(t));
             }
             std::vector<yoloc::Tensor> outputs;
             {
               nb::gil_scoped_release release;
               outputs = d.infer(inputs);
             }
             std::vector<nb::object> out;
             for (const auto& t : outputs) out.push_back(tensor_to_numpy(t));
             return out;
           },
           "inputs"_a)
      .def("evaluate",
           [](const yoloc::Detector& d, const std::string& data, bool progress) {
             const yoloc::detect::MapResult r = d.evaluate(data, progress).map;
             nb::dict out;
             out["map50"] = r.map50;
             out["map50_95"] = r.map50_95;
             out["classes"] = r.classes;
             return out;
           },
           "data"_a, "progress"_a = false)
      .def_prop_ro("class_names", &yoloc::Detector::class_names)
      .def_prop_ro("family", &yoloc::Detector::family)
      .def_prop_ro("target", &yoloc::Detector::target)
      .def_prop_ro("precision", &yoloc::Detector::precision)
      .def_prop_ro("threads", &yoloc::Detector::threads)
      .def_prop_ro("inputs", [](const yoloc::Detector& d) { return tensor_infos(d.inputs()); })
      .def_prop_ro("outputs", [](const yoloc::Detector& d) { return tensor_infos(d.outputs()); });
}
