#include "tools/random_inputs.h"

#include <random>

#include "core/error.h"

namespace yoloc::tools {

std::vector<Tensor> random_inputs(const artifact::Manifest& m, const char* command) {
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(0.f, 1.f);
  std::vector<Tensor> inputs;
  for (const artifact::TensorSpec& spec : m.inputs) {
    const DType dtype = dtype_from_name(spec.dtype);
    if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBFloat16)
      user_error("{} feeds random float inputs; input '{}' is {}", command, spec.name,
                 spec.dtype);
    Tensor t(DType::kFloat32, spec.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    inputs.push_back(dtype == DType::kFloat32 ? std::move(t) : t.cast(dtype));
  }
  return inputs;
}

}  // namespace yoloc::tools
