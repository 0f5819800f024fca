#pragma once
/// Schedule configurations: the named integer knobs of a kernel template, each with a declared
/// domain, so the tuner can enumerate and the records database can store them. Generic over
/// templates and targets; a template adds its own validity rule (KernelTemplate::valid).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace yoloc::codegen {

/// One knob: its name, what it controls, and the values it may take (in the order a search
/// should try them).
struct Knob {
  std::string name;
  std::string doc;
  std::vector<int64_t> domain;
  /// The value a config that lacks this knob means: set for a knob added to a template after
  /// configs were stored (tuning records), to the value that gives the kernel those configs
  /// had; nullopt: a config must set it.
  std::optional<int64_t> absent = std::nullopt;
};

class ScheduleConfig;

/// The search space of one template for one task: its knobs in a fixed order.
struct ScheduleSpace {
  std::vector<Knob> knobs;

  /// The knob called `name`, or nullptr.
  const Knob* find(const std::string& name) const {
    for (const Knob& k : knobs) {
      if (k.name == name) return &k;
    }
    return nullptr;
  }
  /// `cfg` with every knob it lacks that has a value when absent (Knob::absent) set to that
  /// value: how a stored config, perhaps older than some knobs, is read before it is checked
  /// against the space (ScheduleConfig::in_space, a template's valid) and used.
  ScheduleConfig complete(ScheduleConfig cfg) const;
  /// Number of points (product of domain sizes); invalid points are included.
  int64_t size() const {
    int64_t n = 1;
    for (const Knob& k : knobs) n *= static_cast<int64_t>(k.domain.size());
    return n;
  }
};

/// A point of a ScheduleSpace: a value for each knob.
class ScheduleConfig {
 public:
  ScheduleConfig() = default;
  ScheduleConfig(std::map<std::string, int64_t> values) : values_(std::move(values)) {}  // NOLINT

  /// The value of knob `name`; raises InternalError when the config lacks it.
  int64_t get(const std::string& name) const {
    auto it = values_.find(name);
    YOLOC_CHECK(it != values_.end(), "schedule config has no knob '{}'", name);
    return it->second;
  }
  void set(const std::string& name, int64_t v) { values_[name] = v; }
  const std::map<std::string, int64_t>& values() const { return values_; }

  /// True when every knob of `space` is set to a value of its domain (and nothing else is set).
  /// A stored config older than some knobs is read through ScheduleSpace::complete first.
  bool in_space(const ScheduleSpace& space) const {
    if (values_.size() != space.knobs.size()) return false;
    for (const Knob& k : space.knobs) {
      auto it = values_.find(k.name);
      if (it == values_.end()) return false;
      bool found = false;
      for (int64_t v : k.domain) found = found || v == it->second;
      if (!found) return false;
    }
    return true;
  }
  /// Canonical text form "name=value,..." (sorted by name), stable for records and hashes.
  std::string str() const {
    std::string s;
    for (const auto& [k, v] : values_) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
    return s;
  }
  /// The i-th point of `space` (mixed radix over the knobs in order), for exhaustive search.
  static ScheduleConfig at(const ScheduleSpace& space, int64_t i) {
    ScheduleConfig c;
    for (auto it = space.knobs.rbegin(); it != space.knobs.rend(); ++it) {
      const auto n = static_cast<int64_t>(it->domain.size());
      c.set(it->name, it->domain[static_cast<size_t>(i % n)]);
      i /= n;
    }
    return c;
  }

  bool operator==(const ScheduleConfig& o) const { return values_ == o.values_; }

 private:
  std::map<std::string, int64_t> values_;
};

inline ScheduleConfig ScheduleSpace::complete(ScheduleConfig cfg) const {
  for (const Knob& k : knobs) {
    if (k.absent && !cfg.values().contains(k.name)) cfg.set(k.name, *k.absent);
  }
  return cfg;
}

/// A twin's config for a task (the same main loop, other stores: CudaTask::twin_key): `cfg`
/// (through `space`) when `valid` takes it, else the first config `valid` takes that differs from
/// it in one knob (knobs and values in `space`'s order), else nullopt. A conv storing class
/// scores in float32 has no staged epilogue (epi=0), a pair decoding boxes only that (epi=1):
/// either takes its twin's tuned tile with the other epilogue.
template <class Valid>
std::optional<ScheduleConfig> twin_config(const ScheduleSpace& space, const ScheduleConfig& cfg,
                                          const Valid& valid) {
  const ScheduleConfig c = space.complete(cfg);
  if (valid(c)) return c;
  for (const Knob& k : space.knobs) {
    for (int64_t v : k.domain) {
      ScheduleConfig other = c;
      other.set(k.name, v);
      if (other.get(k.name) != c.get(k.name) && valid(other)) return other;
    }
  }
  return std::nullopt;
}

/// Fills a target's task (CpuTask, CudaTask: fields space, default_config, valid) from the
/// template class T for its workload t: what every task extraction does for every template.
template <class T, class OutTask, class Workload>
void set_schedule(OutTask& task, const Workload& t) {
  task.space = T::space(t);
  task.default_config = T::default_config(t);
  task.valid = [t](const ScheduleConfig& c) { return T::valid(t, c); };
}

/// The config `configs` (tuned configs by workload key) holds for task t (CpuTask, CudaTask),
/// read through t's space (ScheduleSpace::complete: it may predate knobs added since), when it
/// is valid for t; nullopt otherwise.
template <class Task>
std::optional<ScheduleConfig> stored_config(const Task& t,
                                            const std::map<std::string, ScheduleConfig>& configs) {
  const auto it = configs.find(t.key);
  if (it == configs.end()) return std::nullopt;
  ScheduleConfig cfg = t.space.complete(it->second);
  if (!t.valid(cfg)) return std::nullopt;
  return cfg;
}

}  // namespace yoloc::codegen
