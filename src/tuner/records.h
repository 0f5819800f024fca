#pragma once
/// The tuning records: one JSON object per line, appended as measurements finish, never
/// rewritten, so an interrupted run loses nothing and a later one resumes from the file.
///
///   {"format": 1, "tool": "0.1.0", "key": "conv2d_nchw16c_f32 n1 c64 ...", "template": "conv",
///    "target": {"kind": "cpu", "arch": "x86_64-avx512", "device": "...", "device_id": 0},
///    "config": {"ocb": 2, "owb": 8, ...}, "batch": 1, "threads": 1, "clock": "cpu",
///    "mode": "kernel",
///    "times": [1.2e-4, ...], "median": 1.2e-4, "error": "", "flops": 1.8e8,
///    "time": "2026-11-30T10:00:00Z", "run": "2026-11-30T09:57:12Z-3f9a0c1e", "default": false}
///
/// Times are seconds of one run of the kernel over `batch` images. A record with an error
/// (build failure, crash, timeout, wrong output) has no times; it keeps the search from
/// trying the config again. Records of another record format or tool version are stale: the
/// kernels they timed may have changed, so they are never applied.
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpu/schedule.h"
#include "tuner/target.h"

namespace yoloc::tuner {

/// Bumped whenever a field changes meaning.
inline constexpr int kRecordFormatVersion = 1;

struct Record {
  int format = kRecordFormatVersion;
  std::string tool = YOLOC_VERSION;
  std::string key;            ///< workload key
  std::string template_name;  ///< the kernel template (informative)
  TuneTarget target;
  codegen::ScheduleConfig config;
  int64_t batch = 1;           ///< images one run covers
  int threads = 1;             ///< threads the run was split over
  std::string clock = "wall";  ///< what `times` measure: "wall" or "cpu" (the thread's CPU time)
  /// "kernel": the kernel timed alone (the search); "model": timed inside whole-model runs,
  /// per occurrence (the in-model re-measurement), which selection prefers.
  std::string mode = "kernel";
  std::vector<double> times;  ///< seconds per run, one per timed repeat
  double median = 0;          ///< seconds; 0 with an error
  std::string error;          ///< why the candidate has no time; empty when it ran
  double flops = 0;           ///< of one run
  std::string time;           ///< when it was measured, ISO 8601 UTC
  /// The tuning run that measured it (an id drawn at the run's start; empty in records written
  /// before runs had ids), and whether the config is its task's default (heuristic) one: a run's
  /// time of the default is the yardstick that makes records of different runs comparable
  /// (best_records).
  std::string run;
  bool is_default = false;

  bool ok() const { return error.empty() && median > 0; }
  /// Seconds per image, to compare records of different batch sizes.
  double seconds_per_image() const { return median / static_cast<double>(batch); }
};

nlohmann::json record_to_json(const Record& r);
/// Raises a UserError naming the field that is missing or of the wrong type.
Record record_from_json(const nlohmann::json& j);

/// The current time in ISO 8601 UTC, for Record::time.
std::string now_iso8601();

/// A records file read back.
struct RecordSet {
  std::vector<Record> records;  ///< current-version records, in file order
  int stale = 0;                ///< records of another format or tool version (skipped)
  int malformed = 0;            ///< lines that are not a record (skipped: e.g. a torn last line)
};

/// Reads a records file; a missing file is an empty set (a run that starts a new file).
/// Raises a UserError when the path exists but cannot be read.
RecordSet load_records(const std::string& path);

/// Appends records to a file, one line each, flushed at once (a crash loses at most the line
/// being written; load_records skips a torn line).
class RecordWriter {
 public:
  /// Opens `path` for appending (creating it). Raises a UserError when it cannot.
  explicit RecordWriter(const std::string& path);
  void write(const Record& r);

 private:
  std::string path_;
  std::ofstream out_;
};

/// How a record's measurement conditions must match to be chosen: records of the requested
/// batch (and thread count, when given) are preferred to others of the same hardware.
struct RecordQuery {
  TuneTarget target;
  int64_t batch = 1;
  int threads = 0;  ///< 0: any
};

/// The time of one config of one workload over all its valid records: the median of their
/// medians (per image), so that a config measured several times (the tuner re-measures its
/// best ones) is judged by its typical time, not by its luckiest run on a noisy machine.
struct ConfigTime {
  codegen::ScheduleConfig config;
  double seconds_per_image = 0;
  int records = 0;
  const Record* last = nullptr;  ///< its latest record
};

/// ConfigTime of every (workload key, config) of the valid records for which `use` is true, by
/// key, then by config string.
std::map<std::string, std::map<std::string, ConfigTime>> config_times(
    const std::vector<Record>& records, const std::function<bool(const Record&)>& use);

/// The fastest config per workload key among the records for the query's hardware: among the
/// records that match the query best (batch and threads, then batch, then any; at each level
/// in-model records before kernel ones), the config with the lowest ConfigTime. Where those
/// records come from several tuning runs, each of which also timed the key's default config, the
/// configs are compared by their time relative to their own run's default instead (the median of
/// those ratios): two machines of one kind differ by a few per cent, which would otherwise decide
/// between configs measured on different ones. The record returned is the chosen config's
/// latest, with `median` set to its ConfigTime (for its batch).
std::map<std::string, Record> best_records(const std::vector<Record>& records,
                                           const RecordQuery& q);

/// Records made before a knob was added lack it (codegen::Knob::absent): completes the config of
/// each record whose key `spaces` has with that space's absent values, so that it is the same
/// config (string) as today's records of it, for best_records' medians and ratios. Other records
/// stay as they are.
void complete_configs(std::vector<Record>& records,
                      const std::map<std::string, codegen::ScheduleSpace>& spaces);

/// best_records' ranking: the `top` best configs per workload key, best first, as their latest
/// records with `median` set to their ConfigTime.
std::map<std::string, std::vector<Record>> ranked_records(const std::vector<Record>& records,
                                                          const RecordQuery& q, size_t top);

/// best_records as configs by workload key, what CpuCompileOptions::configs takes.
std::map<std::string, codegen::ScheduleConfig> best_configs(const std::vector<Record>& records,
                                                            const RecordQuery& q);

/// The batch of a workload key that names one: the "n<batch>" token right after the dtype pair
/// of a CUDA conv key ("cuda_conv2d_nhwc f16->f16 n32 c64 ..."); nullopt for other keys (the
/// generic template's keys embed the batch in every shape, not in one token).
std::optional<int64_t> workload_key_batch(const std::string& key);

/// The same workload at batch `n` (the batch token rewritten); nullopt when the key has no batch
/// token (see workload_key_batch).
std::optional<std::string> workload_key_at_batch(const std::string& key, int64_t n);

/// For each of `keys` (a compile's workload keys) with a batch token but no valid record of its
/// own for the query's hardware: the best record (by best_records, at that batch) of the same
/// workload at the nearest other batch that has valid records, the one with the smallest
/// |log(b / n)| (ties: the larger batch). Its `key` and `batch` are the record's, not the
/// query key's. A kernel's best config at one batch is usually good at a nearby one, and far
/// better than the untuned default; the compiler still checks it is valid for the task. Batches
/// more than kMaxBatchRatio apart never stand in for each other: a tile sized to fill a GPU
/// with 128 images leaves it nearly idle with one (that task keeps its heuristic default).
inline constexpr int64_t kMaxBatchRatio = 16;
std::map<std::string, Record> nearest_batch_records(const std::vector<Record>& records,
                                                    const RecordQuery& q,
                                                    const std::set<std::string>& keys);

}  // namespace yoloc::tuner
