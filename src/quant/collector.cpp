#include "quant/collector.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "ops/reference_executor.h"
#include "quant/calibration_images.h"
#include "tuner/progress.h"

namespace yoloc::quant {

std::vector<double> TensorStats::channel_means() const {
  std::vector<double> m = channel_sums;
  for (double& v : m) v = per_channel > 0 ? v / per_channel : 0.0;
  return m;
}

namespace {

void accumulate(TensorStats& s, const Tensor& t) {
  if (t.dtype() != DType::kFloat32) return;
  const float* p = t.data<float>();
  s.histogram.add(p, t.numel());
  if (t.rank() < 2) return;
  const int64_t N = t.shape()[0], C = t.shape()[1];
  const int64_t inner = t.numel() / (N * C);
  if (s.channel_sums.empty()) s.channel_sums.assign(static_cast<size_t>(C), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      const float* q = p + (n * C + c) * inner;
      for (int64_t k = 0; k < inner; ++k) sum += q[k];
      s.channel_sums[static_cast<size_t>(c)] += sum;
    }
  s.per_channel += static_cast<double>(N * inner);
}

}  // namespace

std::map<std::string, TensorStats> collect_statistics(const Graph& g,
                                                      const detect::DetectorConfig& config,
                                                      const std::vector<std::string>& images,
                                                      const std::vector<std::string>& tensors,
                                                      bool progress) {
  std::map<std::string, TensorStats> stats;
  for (const std::string& t : tensors) stats.try_emplace(t);
  if (g.inputs.size() != 1) user_error("calibration takes models of one image input");
  const Value* input = g.inputs[0];
  tuner::ProgressDisplay display(stderr, progress);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < images.size(); ++i) {
    const Tensor x = calibration_input(images[i], config, input->type.dtype);
    run_reference(g, {{input->name, x}}, [&](const Value& v, const Tensor& t) {
      if (auto it = stats.find(v.name); it != stats.end()) accumulate(it->second, t);
    });
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double eta = elapsed / static_cast<double>(i + 1) * static_cast<double>(images.size() - i - 1);
    display.show(fmt::format("calibrating [{}/{}] {} | {:.1f} s/image | {} elapsed, ETA {}", i + 1,
                             images.size(), std::filesystem::path(images[i]).filename().string(),
                             elapsed / static_cast<double>(i + 1), tuner::format_duration(elapsed),
                             tuner::format_duration(eta)));
  }
  display.finish();
  return stats;
}

}  // namespace yoloc::quant
