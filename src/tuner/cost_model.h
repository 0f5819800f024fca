#pragma once
/// The learned cost model of the evolutionary search: gradient-boosted trees (xgboost) that
/// predict how fast a config runs relative to the best known config of its task, from the
/// task's features (template, FLOPs, bytes, shapes) and the config's knob values plus a few
/// quantities derived from them (register tile, column waste). One model serves all tasks, so
/// what it learns on one conv carries over to the others; it is retrained from all samples
/// after each round of measurements (a few hundred rows: milliseconds).
#include <memory>
#include <string>
#include <vector>

#include "tuner/task_list.h"

namespace yoloc::tuner {

class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  /// Adds a measurement of `config` on `task`: its seconds, or a negative value for a failed
  /// candidate (it learns those as the slowest). `task` must outlive the model.
  void add(const TuneTask& task, const codegen::ScheduleConfig& config, double seconds);
  /// Retrains on every sample added so far (no-op below kMinSamples).
  void train();
  /// True once train() has fitted a model.
  bool trained() const;
  size_t samples() const;

  /// Predicted relative speed (higher is faster; about 1 for the best known config) of each
  /// config on `task`. Raises InternalError when the model is not trained.
  std::vector<float> predict(const TuneTask& task,
                             const std::vector<codegen::ScheduleConfig>& configs);

  static constexpr size_t kMinSamples = 8;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The columns of a model: the template names and knob names of the samples it was trained on
/// (sorted), which every target's templates declare themselves (no list of them here).
struct FeatureColumns {
  std::vector<std::string> templates;
  std::vector<std::string> knobs;
};

/// The model's input row for (task, config): one column per template name of `columns` (1 for
/// the task's own), the task features, one column per knob name (NaN when the task has no such
/// knob), then the derived features.
std::vector<float> cost_features(const TuneTask& task, const codegen::ScheduleConfig& config,
                                 const FeatureColumns& columns);

}  // namespace yoloc::tuner
