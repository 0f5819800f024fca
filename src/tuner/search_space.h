#pragma once
/// Points of a task's schedule space: uniform sampling of valid configs, enumeration of small
/// spaces, and the neighbourhood moves of the evolutionary search.
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "tuner/task_list.h"

namespace yoloc::tuner {

using Rng = std::mt19937_64;
using codegen::ScheduleConfig;
using codegen::ScheduleSpace;

/// Spaces up to this many points (valid or not) are enumerated once and searched by index.
inline constexpr int64_t kEnumerableSpace = 1 << 16;

/// Every valid config of the task, in ScheduleConfig::at order; nullopt when the space has
/// more than `limit` points.
std::optional<std::vector<ScheduleConfig>> enumerate_valid(const TaskInfo& t,
                                                           int64_t limit = kEnumerableSpace);

/// A uniformly drawn point of the space that the task accepts, or nullopt when `tries` draws
/// found none.
std::optional<ScheduleConfig> sample_valid(const TaskInfo& t, Rng& rng,
                                           int tries = 1000);

/// `c` with one knob (that has another value) moved to another value of its domain: a
/// neighbouring value with probability 2/3, any other value otherwise. May be invalid.
ScheduleConfig mutate(const ScheduleSpace& space, const ScheduleConfig& c, Rng& rng);

/// Each knob's value from `a` or `b` at random. May be invalid.
ScheduleConfig crossover(const ScheduleSpace& space, const ScheduleConfig& a,
                         const ScheduleConfig& b, Rng& rng);

}  // namespace yoloc::tuner
