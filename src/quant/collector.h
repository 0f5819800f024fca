#pragma once
/// Calibration proper: the optimized float graph run on the reference executor over the
/// calibration images, the histogram and per-channel means of every int8 conv's input kept.
#include <map>
#include <string>
#include <vector>

#include "detect/pipeline.h"
#include "ir/graph.h"
#include "quant/histogram.h"

namespace yoloc::quant {

/// What calibration saw of one activation.
struct TensorStats {
  Histogram histogram;
  std::vector<double> channel_sums;  ///< per channel (dim 1) over the images' elements
  double per_channel = 0;            ///< elements per channel summed over
  std::vector<double> channel_means() const;
};

/// Runs g over `images` (pre-processed by `config`'s family), keeping the statistics of the
/// values named in `tensors`. With `progress`, a status line per image on stderr.
std::map<std::string, TensorStats> collect_statistics(const Graph& g,
                                                      const detect::DetectorConfig& config,
                                                      const std::vector<std::string>& images,
                                                      const std::vector<std::string>& tensors,
                                                      bool progress);

}  // namespace yoloc::quant
