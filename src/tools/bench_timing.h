#pragma once
/// The timing helpers of `yoloc bench` and of the device measurements (device_measurements.h):
/// wall-clock samples of repeated calls, their summary, and the synthetic frame of end-to-end
/// timings.
#include <chrono>
#include <vector>

#include "yoloc/image.h"

namespace yoloc::tools {

struct Stats {
  double median = 0, p90 = 0, p99 = 0, min = 0, max = 0, mean = 0;
};

/// The summary of millisecond samples (at least one); quantiles linearly interpolated.
Stats stats(std::vector<double> ms);

/// The middle sample (the upper one of an even count); 0 for none.
double median(std::vector<double> v);

/// Wall-clock milliseconds of `iters` calls of fn after `warmup` calls.
template <class Fn>
std::vector<double> time_calls(int warmup, int iters, Fn&& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  return ms;
}

/// A 1280 x 720 frame of smooth gradients, when no --image is given.
detect::Image synthetic_frame();

}  // namespace yoloc::tools
