#include "tuner/search_space.h"

#include <algorithm>

namespace yoloc::tuner {

std::optional<std::vector<ScheduleConfig>> enumerate_valid(const TaskInfo& t,
                                                           int64_t limit) {
  const int64_t n = t.space.size();
  if (n > limit) return std::nullopt;
  std::vector<ScheduleConfig> out;
  for (int64_t i = 0; i < n; ++i) {
    ScheduleConfig c = ScheduleConfig::at(t.space, i);
    if (t.valid(c)) out.push_back(std::move(c));
  }
  return out;
}

std::optional<ScheduleConfig> sample_valid(const TaskInfo& t, Rng& rng, int tries) {
  for (int i = 0; i < tries; ++i) {
    ScheduleConfig c;
    for (const codegen::Knob& k : t.space.knobs) {
      std::uniform_int_distribution<size_t> d(0, k.domain.size() - 1);
      c.set(k.name, k.domain[d(rng)]);
    }
    if (t.valid(c)) return c;
  }
  return std::nullopt;
}

ScheduleConfig mutate(const ScheduleSpace& space, const ScheduleConfig& c, Rng& rng) {
  std::vector<const codegen::Knob*> movable;
  for (const codegen::Knob& k : space.knobs)
    if (k.domain.size() > 1) movable.push_back(&k);
  if (movable.empty()) return c;
  const codegen::Knob& k =
      *movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
  const auto cur = std::find(k.domain.begin(), k.domain.end(), c.get(k.name));
  const auto i = static_cast<int64_t>(cur - k.domain.begin());
  const auto n = static_cast<int64_t>(k.domain.size());
  int64_t j;
  if (cur == k.domain.end()) {
    j = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
  } else if (std::uniform_int_distribution<int>(0, 2)(rng) < 2) {
    // A neighbour in the domain's order (domains list values in increasing size).
    const bool up = i == 0 || (i < n - 1 && std::bernoulli_distribution(0.5)(rng));
    j = up ? i + 1 : i - 1;
  } else {
    j = std::uniform_int_distribution<int64_t>(0, n - 2)(rng);
    if (j >= i) ++j;
  }
  ScheduleConfig out = c;
  out.set(k.name, k.domain[static_cast<size_t>(j)]);
  return out;
}

ScheduleConfig crossover(const ScheduleSpace& space, const ScheduleConfig& a,
                         const ScheduleConfig& b, Rng& rng) {
  ScheduleConfig out;
  std::bernoulli_distribution coin(0.5);
  for (const codegen::Knob& k : space.knobs)
    out.set(k.name, coin(rng) ? a.get(k.name) : b.get(k.name));
  return out;
}

}  // namespace yoloc::tuner
