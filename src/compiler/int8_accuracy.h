#pragma once
/// compile --precision int8 --max-map-drop D --validation DIR: the accuracy-aware mode. The
/// convs the sensitivity table ranks highest are kept in float (1, 2, 4, ... of them) until the
/// int8 artifact's mAP50-95 on the validation images is within D of the float artifact's.
#include <string>

#include "yoloc/compiler.h"

namespace yoloc::compiler {

/// Searches the convs of the ONNX model at `model` to keep in float (prints each step's mAP) and holds what the final
/// compile needs: options() is o with the calibration in a file of a temporary folder (removed
/// with the object) and the most sensitive convs added to --int8-skip. Raises a UserError when
/// the validation folder is no dataset or a calibration file has no sensitivity table.
class AccuracyAwareInt8 {
 public:
  AccuracyAwareInt8(const std::string& model, const CompileOptions& o);
  ~AccuracyAwareInt8();
  AccuracyAwareInt8(const AccuracyAwareInt8&) = delete;
  AccuracyAwareInt8& operator=(const AccuracyAwareInt8&) = delete;
  const CompileOptions& options() const { return final_; }

 private:
  std::string dir_;
  CompileOptions final_;
};

}  // namespace yoloc::compiler
