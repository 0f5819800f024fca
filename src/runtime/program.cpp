#include "runtime/program.h"

#include "core/dtype.h"
#include "core/error.h"

namespace yoloc::runtime {

void check_run_inputs(const artifact::Manifest& m, const std::vector<Tensor>& inputs) {
  if (inputs.size() != m.inputs.size())
    user_error("the model takes {} input(s), {} were given", m.inputs.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const artifact::TensorSpec& spec = m.inputs[i];
    const Tensor& t = inputs[i];
    if (dtype_name(t.dtype()) != spec.dtype || t.shape() != spec.shape)
      user_error("input '{}' must be {} of shape {}; got {} of shape {}", spec.name, spec.dtype,
                 shape_str(spec.shape), dtype_name(t.dtype()), shape_str(t.shape()));
  }
}

}  // namespace yoloc::runtime
