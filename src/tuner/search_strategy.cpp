#include "tuner/search_strategy.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "core/error.h"

namespace yoloc::tuner {
namespace {

/// The valid points of each task's space, enumerated once (nullopt: too large to enumerate).
class ValidCache {
 public:
  const std::optional<std::vector<ScheduleConfig>>& of(const TuneTask& t) {
    auto it = cache_.find(t.key());
    if (it == cache_.end()) it = cache_.emplace(t.key(), enumerate_valid(t.task)).first;
    return it->second;
  }

 private:
  std::map<std::string, std::optional<std::vector<ScheduleConfig>>> cache_;
};

/// Up to n untried valid configs drawn uniformly, none in `taken`.
std::vector<ScheduleConfig> draw(const SearchState& s, int n, ValidCache& cache, Rng& rng,
                                 std::set<std::string> taken = {}) {
  std::vector<ScheduleConfig> out;
  const auto& all = cache.of(*s.task);
  if (all) {
    std::vector<const ScheduleConfig*> left;
    for (const ScheduleConfig& c : *all)
      if (!s.tried.count(c.str()) && !taken.count(c.str())) left.push_back(&c);
    std::shuffle(left.begin(), left.end(), rng);
    for (size_t i = 0; i < left.size() && static_cast<int>(out.size()) < n; ++i)
      out.push_back(*left[i]);
    return out;
  }
  for (int attempt = 0; attempt < 50 * n && static_cast<int>(out.size()) < n; ++attempt) {
    std::optional<ScheduleConfig> c = sample_valid(s.task->task, rng);
    if (!c) break;
    if (s.tried.count(c->str()) || !taken.insert(c->str()).second) continue;
    out.push_back(std::move(*c));
  }
  return out;
}

/// An untried valid config that differs from the best measured one in one knob, drawn uniformly
/// (nullopt: none measured, or every such step tried).
std::optional<ScheduleConfig> step_from_best(const SearchState& s, Rng& rng,
                                             const std::set<std::string>& taken) {
  if (s.measured.empty()) return std::nullopt;
  const ScheduleConfig& best =
      std::min_element(s.measured.begin(), s.measured.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  const TaskInfo& t = s.task->task;
  std::vector<ScheduleConfig> steps;
  for (const codegen::Knob& k : t.space.knobs) {
    for (int64_t v : k.domain) {
      if (best.values().contains(k.name) && best.get(k.name) == v) continue;
      ScheduleConfig c = best;
      c.set(k.name, v);
      if (t.valid(c) && !s.tried.count(c.str()) && !taken.count(c.str()))
        steps.push_back(std::move(c));
    }
  }
  if (steps.empty()) return std::nullopt;
  return steps[std::uniform_int_distribution<size_t>(0, steps.size() - 1)(rng)];
}

class RandomSearch : public SearchStrategy {
 public:
  explicit RandomSearch(uint64_t seed) : rng_(seed) {}
  std::vector<ScheduleConfig> propose(const SearchState& s, int n) override {
    return draw(s, n, cache_, rng_);
  }

 private:
  Rng rng_;
  ValidCache cache_;
};

class GridSearch : public SearchStrategy {
 public:
  explicit GridSearch(uint64_t seed) : rng_(seed) {}
  std::vector<ScheduleConfig> propose(const SearchState& s, int n) override {
    const auto& all = cache_.of(*s.task);
    if (!all) return draw(s, n, cache_, rng_);  // too large for a grid
    std::vector<ScheduleConfig> out;
    for (const ScheduleConfig& c : *all) {
      if (static_cast<int>(out.size()) == n) break;
      if (!s.tried.count(c.str())) out.push_back(c);
    }
    return out;
  }

 private:
  Rng rng_;
  ValidCache cache_;
};

class EvolutionarySearch : public SearchStrategy {
 public:
  EvolutionarySearch(CostModel* model, uint64_t seed, size_t rank_whole)
      : model_(model), rng_(seed), rank_whole_(rank_whole) {}

  std::vector<ScheduleConfig> propose(const SearchState& s, int n) override {
    if (!model_ || !model_->trained()) return draw(s, n, cache_, rng_);
    std::vector<ScheduleConfig> pool = candidates(s);
    const std::vector<float> score = model_->predict(*s.task, pool);
    std::vector<size_t> order(pool.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return score[a] > score[b]; });
    // Most by the model, the rest at random (at least one in a batch of four or more).
    const int random_n = n >= 4 ? std::max(1, n / 5) : 0;
    std::vector<ScheduleConfig> out;
    std::set<std::string> taken;
    for (size_t i : order) {
      if (static_cast<int>(out.size()) == n - random_n) break;
      if (taken.insert(pool[i].str()).second) out.push_back(pool[i]);
    }
    // One of the others is a step from the best config along one knob, unranked: the model
    // knows least of the knob values nobody measured (a new knob's, when a tune resumes from
    // records made before it), and the breeding above reaches them only through its ranking.
    if (random_n > 0) {
      if (std::optional<ScheduleConfig> c = step_from_best(s, rng_, taken)) {
        taken.insert(c->str());
        out.push_back(std::move(*c));
      }
    }
    for (ScheduleConfig& c : draw(s, n - static_cast<int>(out.size()), cache_, rng_, taken))
      out.push_back(std::move(c));
    return out;
  }

 private:
  static constexpr int kPopulation = 64, kGenerations = 4;

  /// Untried valid configs worth scoring: the whole space when small, else the members of
  /// every generation bred from the best measured configs.
  std::vector<ScheduleConfig> candidates(const SearchState& s) {
    const auto& all = cache_.of(*s.task);
    std::vector<ScheduleConfig> out;
    if (all && all->size() <= rank_whole_) {
      for (const ScheduleConfig& c : *all)
        if (!s.tried.count(c.str())) out.push_back(c);
      return out;
    }
    const TaskInfo& t = s.task->task;
    std::vector<std::pair<ScheduleConfig, double>> best = s.measured;
    std::sort(best.begin(), best.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    std::vector<ScheduleConfig> pop;
    for (size_t i = 0; i < best.size() && pop.size() < kPopulation / 4; ++i)
      pop.push_back(best[i].first);
    for (ScheduleConfig& c : draw(s, kPopulation - static_cast<int>(pop.size()), cache_, rng_))
      pop.push_back(std::move(c));
    if (pop.empty()) return out;
    std::set<std::string> seen;
    for (int gen = 0; gen < kGenerations; ++gen) {
      const std::vector<float> fit = model_->predict(*s.task, pop);
      // Each generation is bred from the last: parents by tournaments of two on the model's
      // score, then crossover (sometimes) and one mutation.
      const auto pick = [&]() -> const ScheduleConfig& {
        std::uniform_int_distribution<size_t> d(0, pop.size() - 1);
        const size_t a = d(rng_), b = d(rng_);
        return pop[fit[a] >= fit[b] ? a : b];
      };
      std::vector<ScheduleConfig> next;
      for (int tries = 0; tries < 8 * kPopulation && next.size() < kPopulation; ++tries) {
        ScheduleConfig c = std::bernoulli_distribution(0.3)(rng_)
                               ? crossover(t.space, pick(), pick(), rng_)
                               : pick();
        c = mutate(t.space, c, rng_);
        if (!t.valid(c) || !seen.insert(c.str()).second) continue;
        if (!s.tried.count(c.str())) out.push_back(c);
        next.push_back(std::move(c));
      }
      if (next.empty()) break;
      pop = std::move(next);
    }
    return out;
  }

  CostModel* model_;
  Rng rng_;
  size_t rank_whole_;
  ValidCache cache_;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, CostModel* model,
                                              uint64_t seed, size_t rank_whole) {
  if (name == "random") return std::make_unique<RandomSearch>(seed);
  if (name == "grid") return std::make_unique<GridSearch>(seed);
  if (name == "evolutionary") return std::make_unique<EvolutionarySearch>(model, seed, rank_whole);
  user_error("--strategy {}: expected random, grid or evolutionary", name);
}

}  // namespace yoloc::tuner
