#include "quant/sensitivity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ops/reference_executor.h"
#include "tuner/progress.h"

namespace yoloc::quant {

namespace {

std::vector<std::vector<double>> run_all(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<std::vector<double>> out;
  for (const Tensor& x : inputs)
    for (const NamedTensor& t : run_reference(g, {{g.inputs[0]->name, x}}))
      out.push_back(t.tensor.to_doubles());
  return out;
}

}  // namespace

std::vector<LayerSensitivity> measure_sensitivity(const Graph& g, const Int8Plan& plan,
                                                  const std::vector<Tensor>& inputs,
                                                  bool progress) {
  const std::vector<std::vector<double>> want = run_all(g, inputs);
  double norm = 0;
  for (const auto& v : want)
    for (double x : v) norm += x * x;
  tuner::ProgressDisplay display(stderr, progress);
  std::vector<LayerSensitivity> result;
  size_t done = 0;
  for (const auto& [name, conv] : plan.convs) {
    std::unique_ptr<Graph> q = g.clone();
    Int8Plan one;
    one.bias_correction = plan.bias_correction;
    one.convs.emplace(name, conv);
    PassContext ctx;
    ctx.int8 = &one;
    QuantizeGraph().run(*q, ctx);
    const std::vector<std::vector<double>> got = run_all(*q, inputs);
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i)
      for (size_t k = 0; k < got[i].size(); ++k)
        err += (got[i][k] - want[i][k]) * (got[i][k] - want[i][k]);
    result.push_back({name, norm > 0 ? std::sqrt(err / norm) : 0.0});
    display.show(fmt::format("sensitivity [{}/{}] {}", ++done, plan.convs.size(), name));
  }
  display.finish();
  std::sort(result.begin(), result.end(),
            [](const LayerSensitivity& a, const LayerSensitivity& b) { return a.error > b.error; });
  return result;
}

}  // namespace yoloc::quant
