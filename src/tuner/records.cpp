#include "tuner/records.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace yoloc::tuner {

nlohmann::json record_to_json(const Record& r) {
  nlohmann::json cfg = nlohmann::json::object();
  for (const auto& [k, v] : r.config.values()) cfg[k] = v;
  return {{"format", r.format},
          {"tool", r.tool},
          {"key", r.key},
          {"template", r.template_name},
          {"target", target_to_json(r.target)},
          {"config", cfg},
          {"batch", r.batch},
          {"threads", r.threads},
          {"clock", r.clock},
          {"mode", r.mode},
          {"times", r.times},
          {"median", r.median},
          {"error", r.error},
          {"flops", r.flops},
          {"time", r.time},
          {"run", r.run},
          {"default", r.is_default}};
}

namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* name) {
  if (!j.is_object() || !j.contains(name)) user_error("record without '{}'", name);
  return j[name];
}

template <class T>
T typed(const nlohmann::json& j, const char* name) {
  const nlohmann::json& v = field(j, name);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts a float or an out-of-range integer by a plain cast (undefined for 1e48).
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                          : v.is_number_integer() && v.get<int64_t>() >= std::numeric_limits<T>::min() &&
                                v.get<int64_t>() <= std::numeric_limits<T>::max();
    if (!fits) user_error("record field '{}' is not an integer of its range: {}", name, v.dump());
  }
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    user_error("record field '{}' has the wrong type: {}", name, v.dump());
  }
}

}  // namespace

Record record_from_json(const nlohmann::json& j) {
  Record r;
  r.format = typed<int>(j, "format");
  r.tool = typed<std::string>(j, "tool");
  r.key = typed<std::string>(j, "key");
  r.template_name = j.value("template", "");
  r.target = target_from_json(field(j, "target"));
  const nlohmann::json& cfg = field(j, "config");
  if (!cfg.is_object()) user_error("record field 'config' is not an object");
  for (const auto& [k, v] : cfg.items()) {
    if (!v.is_number_integer()) user_error("record config knob '{}' is not an integer", k);
    r.config.set(k, v.get<int64_t>());
  }
  r.batch = typed<int64_t>(j, "batch");
  r.threads = typed<int>(j, "threads");
  r.times = typed<std::vector<double>>(j, "times");
  r.median = typed<double>(j, "median");
  r.error = typed<std::string>(j, "error");
  r.flops = j.value("flops", 0.0);
  r.clock = j.value("clock", "wall");
  r.mode = j.value("mode", "kernel");
  r.time = j.value("time", "");
  r.run = j.value("run", "");
  r.is_default = j.value("default", false);
  if (r.batch < 1) user_error("record batch {} is not positive", r.batch);
  return r;
}

std::string now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

RecordSet load_records(const std::string& path) {
  RecordSet set;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return set;
  std::ifstream f(path);
  if (!f) user_error("cannot read the records file '{}'", path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      // Version first: a stale record may have another layout altogether.
      const bool current = j.is_object() && j.contains("format") &&
                           j["format"].is_number_integer() &&
                           j["format"].get<int64_t>() == kRecordFormatVersion &&
                           j.value("tool", "") == YOLOC_VERSION;
      if (!current) {
        ++set.stale;
        continue;
      }
      set.records.push_back(record_from_json(j));
    } catch (const nlohmann::json::exception&) {
      ++set.malformed;
    } catch (const UserError&) {
      ++set.malformed;
    }
  }
  return set;
}

RecordWriter::RecordWriter(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) user_error("--records {}: cannot open the file for appending", path);
}

void RecordWriter::write(const Record& r) {
  out_ << record_to_json(r).dump() << "\n";
  out_.flush();
  if (!out_) user_error("--records {}: cannot write (disk full?)", path_);
}

namespace {

/// The median of v (not empty).
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::map<std::string, std::map<std::string, ConfigTime>> config_times(
    const std::vector<Record>& records, const std::function<bool(const Record&)>& use) {
  std::map<std::string, std::map<std::string, std::vector<const Record*>>> groups;
  for (const Record& r : records)
    if (r.ok() && use(r)) groups[r.key][r.config.str()].push_back(&r);
  std::map<std::string, std::map<std::string, ConfigTime>> out;
  for (const auto& [key, configs] : groups) {
    for (const auto& [cfg, rs] : configs) {
      std::vector<double> t;
      for (const Record* r : rs) t.push_back(r->seconds_per_image());
      ConfigTime ct;
      ct.config = rs.back()->config;
      ct.seconds_per_image = median_of(t);
      ct.records = static_cast<int>(t.size());
      ct.last = rs.back();
      out[key].emplace(cfg, ct);
    }
  }
  return out;
}

namespace {

/// For the keys whose valid records (those `use` takes) come from more than one run, every one of
/// them with a run id and a time of the key's default config in that run: each config's median
/// time relative to its run's default (median of the run's default records), by key, then by
/// config string. Other keys are absent.
std::map<std::string, std::map<std::string, double>> relative_times(
    const std::vector<Record>& records, const std::function<bool(const Record&)>& use) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> defaults;  // (key, run)
  std::map<std::string, std::set<std::string>> runs;
  std::set<std::string> unrelatable;
  for (const Record& r : records) {
    if (!r.ok() || !use(r)) continue;
    runs[r.key].insert(r.run);
    if (r.run.empty()) unrelatable.insert(r.key);
    if (r.is_default && !r.run.empty()) defaults[{r.key, r.run}].push_back(r.seconds_per_image());
  }
  std::map<std::pair<std::string, std::string>, double> yardstick;  // (key, run): its median
  for (const auto& [key_run, times] : defaults) yardstick[key_run] = median_of(times);
  std::map<std::string, std::map<std::string, std::vector<double>>> ratios;  // key, config
  for (const Record& r : records) {
    if (!r.ok() || !use(r) || unrelatable.count(r.key) || runs[r.key].size() < 2) continue;
    const auto y = yardstick.find({r.key, r.run});
    if (y == yardstick.end()) {
      unrelatable.insert(r.key);
      continue;
    }
    ratios[r.key][r.config.str()].push_back(r.seconds_per_image() / y->second);
  }
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& [key, configs] : ratios) {
    if (unrelatable.count(key)) continue;
    for (const auto& [cfg, v] : configs) out[key][cfg] = median_of(v);
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<Record>> ranked_records(const std::vector<Record>& records,
                                                          const RecordQuery& q, size_t top) {
  // How well a record's conditions match: batch and threads, batch, or only the hardware;
  // at each of those, in the model before alone.
  const auto level = [&](const Record& r) {
    const int in_model = r.mode == "model" ? 1 : 0;
    if (r.batch != q.batch) return in_model;
    return (q.threads == 0 || r.threads == q.threads ? 4 : 2) + in_model;
  };
  std::map<std::string, int> best_level;
  for (const Record& r : records) {
    if (!r.ok() || !r.target.same_hardware(q.target)) continue;
    int& l = best_level.try_emplace(r.key, 0).first->second;
    l = std::max(l, level(r));
  }
  const auto use = [&](const Record& r) {
    return r.target.same_hardware(q.target) && level(r) == best_level.at(r.key);
  };
  const auto times = config_times(records, use);
  const auto relative = relative_times(records, use);
  std::map<std::string, std::vector<Record>> out;
  for (const auto& [key, configs] : times) {
    std::vector<std::pair<double, const ConfigTime*>> order;
    const auto rel = relative.find(key);
    for (const auto& [cfg, ct] : configs)
      order.emplace_back(rel != relative.end() ? rel->second.at(cfg) : ct.seconds_per_image, &ct);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Record>& ranked = out[key];
    for (size_t i = 0; i < order.size() && i < top; ++i) {
      Record r = *order[i].second->last;
      r.median = order[i].second->seconds_per_image * static_cast<double>(r.batch);
      ranked.push_back(std::move(r));
    }
  }
  return out;
}

std::map<std::string, Record> best_records(const std::vector<Record>& records,
                                           const RecordQuery& q) {
  std::map<std::string, Record> out;
  for (auto& [key, ranked] : ranked_records(records, q, 1)) out.emplace(key, std::move(ranked[0]));
  return out;
}

void complete_configs(std::vector<Record>& records,
                      const std::map<std::string, codegen::ScheduleSpace>& spaces) {
  for (Record& r : records) {
    const auto it = spaces.find(r.key);
    if (it != spaces.end()) r.config = it->second.complete(r.config);
  }
}

std::map<std::string, codegen::ScheduleConfig> best_configs(const std::vector<Record>& records,
                                                            const RecordQuery& q) {
  std::map<std::string, codegen::ScheduleConfig> out;
  for (const auto& [k, r] : best_records(records, q)) out.emplace(k, r.config);
  return out;
}

namespace {

/// Where a key's batch digits lie: after "cuda_conv2d_nhwc <in>-><out> n" (the key of
/// codegen::cuda::CudaConvTask), up to the next space.
std::optional<std::pair<size_t, size_t>> batch_token(const std::string& key) {
  static constexpr std::string_view kPrefix = "cuda_conv2d_nhwc ";
  if (!key.starts_with(kPrefix)) return std::nullopt;
  const size_t dtypes_end = key.find(' ', kPrefix.size());
  if (dtypes_end == std::string::npos) return std::nullopt;
  const std::string_view dtypes(key.data() + kPrefix.size(), dtypes_end - kPrefix.size());
  if (dtypes.find("->") == std::string_view::npos) return std::nullopt;
  const size_t begin = dtypes_end + 2;
  if (begin > key.size() || key[dtypes_end + 1] != 'n') return std::nullopt;
  size_t end = begin;
  while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end]))) ++end;
  // At most 18 digits: the batch must fit an int64_t.
  if (end == begin || end - begin > 18 || (end < key.size() && key[end] != ' '))
    return std::nullopt;
  return std::pair{begin, end - begin};
}

}  // namespace

std::optional<int64_t> workload_key_batch(const std::string& key) {
  const auto t = batch_token(key);
  if (!t) return std::nullopt;
  return std::stoll(key.substr(t->first, t->second));
}

std::optional<std::string> workload_key_at_batch(const std::string& key, int64_t n) {
  const auto t = batch_token(key);
  if (!t) return std::nullopt;
  std::string out = key;
  out.replace(t->first, t->second, std::to_string(n));
  return out;
}

std::map<std::string, Record> nearest_batch_records(const std::vector<Record>& records,
                                                    const RecordQuery& q,
                                                    const std::set<std::string>& keys) {
  // The valid records of this hardware by workload (its key at batch 0, a batch no key has).
  std::set<std::string> measured;
  std::map<std::string, std::map<int64_t, std::vector<Record>>> by_workload;
  for (const Record& r : records) {
    if (!r.ok() || !r.target.same_hardware(q.target)) continue;
    measured.insert(r.key);
    const auto b = workload_key_batch(r.key);
    if (b) by_workload[*workload_key_at_batch(r.key, 0)][*b].push_back(r);
  }
  std::map<std::string, Record> out;
  for (const std::string& key : keys) {
    const auto n = workload_key_batch(key);
    if (!n || *n < 1 || measured.contains(key)) continue;
    const auto w = by_workload.find(*workload_key_at_batch(key, 0));
    if (w == by_workload.end()) continue;
    // |log(b / n)| compared exactly, as the ratio max(b, n) / min(b, n) (cross-multiplied).
    const auto farther = [&](int64_t a, int64_t b) {
      const __int128 ra = std::max(a, *n), da = std::min(a, *n);
      const __int128 rb = std::max(b, *n), db = std::min(b, *n);
      return ra * db > rb * da;
    };
    int64_t nearest = 0;
    for (const auto& [b, rs] : w->second) {
      if (nearest == 0 || farther(nearest, b) || (!farther(b, nearest) && b > nearest))
        nearest = b;
    }
    if (nearest == 0 || std::max(nearest, *n) > kMaxBatchRatio * std::min(nearest, *n)) continue;
    RecordQuery at = q;
    at.batch = nearest;
    for (auto& [k, r] : best_records(w->second.at(nearest), at)) out.emplace(key, std::move(r));
  }
  return out;
}

}  // namespace yoloc::tuner
