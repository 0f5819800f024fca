// Tuning records: JSON-lines round trip, version filtering, torn lines, best record selection.
#include <gtest/gtest.h>

#include <fstream>

#include "tuner/records.h"
#include "tuner_test_util.h"

namespace yoloc::tuner {
namespace {

using codegen::ScheduleConfig;
using testing::TempDir;

TuneTarget target(const std::string& device = "Test CPU") {
  TuneTarget t;
  t.kind = "cpu";
  t.arch = "x86_64-avx512";
  t.device = device;
  return t;
}

Record record(const std::string& key, ScheduleConfig cfg, double median,
              const std::string& device = "Test CPU") {
  Record r;
  r.key = key;
  r.template_name = "conv";
  r.target = target(device);
  r.config = std::move(cfg);
  r.times = {median * 1.1, median, median * 0.9};
  r.median = median;
  r.flops = 1e6;
  r.time = "2026-11-30T10:00:00Z";
  return r;
}

TEST(TunerRecords, RoundTripThroughAFile) {
  TempDir dir;
  const std::string path = dir.path("r.jsonl");
  Record a = record("conv k1", ScheduleConfig({{"ocb", 2}, {"owb", 8}}), 1.5e-4);
  a.batch = 4;
  a.threads = 2;
  a.clock = "cpu";
  a.mode = "model";
  Record b = record("pool k2", ScheduleConfig({{"separable", 1}}), 0);
  b.times.clear();
  b.error = "crashed: signal 11 (Segmentation fault)";
  b.target.device_id = 3;
  {
    RecordWriter w(path);
    w.write(a);
  }
  {
    RecordWriter w(path);  // appends
    w.write(b);
  }
  const RecordSet set = load_records(path);
  EXPECT_EQ(set.stale, 0);
  EXPECT_EQ(set.malformed, 0);
  ASSERT_EQ(set.records.size(), 2u);
  const Record& x = set.records[0];
  EXPECT_EQ(x.key, "conv k1");
  EXPECT_EQ(x.template_name, "conv");
  EXPECT_EQ(x.target, a.target);
  EXPECT_EQ(x.config, a.config);
  EXPECT_EQ(x.batch, 4);
  EXPECT_EQ(x.threads, 2);
  EXPECT_EQ(x.clock, "cpu");
  EXPECT_EQ(x.mode, "model");
  EXPECT_EQ(set.records[1].mode, "kernel");
  EXPECT_EQ(x.times, a.times);
  EXPECT_DOUBLE_EQ(x.median, 1.5e-4);
  EXPECT_TRUE(x.ok());
  EXPECT_EQ(x.format, kRecordFormatVersion);
  EXPECT_EQ(x.tool, std::string(YOLOC_VERSION));
  const Record& y = set.records[1];
  EXPECT_FALSE(y.ok());
  EXPECT_EQ(y.error, b.error);
  EXPECT_EQ(y.target.device_id, 3);
  EXPECT_TRUE(y.times.empty());
}

TEST(TunerRecords, StaleVersionsAndTornLinesAreSkipped) {
  TempDir dir;
  const std::string path = dir.path("r.jsonl");
  nlohmann::json cur = record_to_json(record("k", ScheduleConfig({{"u", 1}}), 1e-3));
  nlohmann::json old_format = cur, old_tool = cur;
  old_format["format"] = kRecordFormatVersion + 1;
  old_tool["tool"] = "0.0.1-old";
  nlohmann::json no_key = cur;
  no_key.erase("key");
  {
    std::ofstream f(path);
    f << cur.dump() << "\n"
      << old_format.dump() << "\n"
      << "\n"
      << old_tool.dump() << "\n"
      << no_key.dump() << "\n"
      << cur.dump().substr(0, 40);  // a torn last line
  }
  const RecordSet set = load_records(path);
  EXPECT_EQ(set.records.size(), 1u);
  EXPECT_EQ(set.stale, 2);
  EXPECT_EQ(set.malformed, 2);
  // A missing file is an empty set: a first run starts it.
  EXPECT_TRUE(load_records(dir.path("missing.jsonl")).records.empty());
}

TEST(TunerRecords, BestRecordPerKeyForTheTarget) {
  const ScheduleConfig c1({{"u", 1}}), c2({{"u", 2}}), c3({{"u", 3}}), c4({{"u", 4}});
  std::vector<Record> rs = {
      record("a", c1, 3e-3),
      record("a", c2, 2e-3),
      record("a", c3, 1e-3, "Other CPU"),  // faster, but another machine
      record("b", c4, 5e-3),
  };
  Record failed = record("a", c4, 0);
  failed.error = "timeout";
  rs.push_back(failed);
  Record big_batch = record("b", c1, 8e-3);  // 2 ms per image at batch 4
  big_batch.batch = 4;
  rs.push_back(big_batch);

  RecordQuery q{target(), 1, 0};
  auto best = best_records(rs, q);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best.at("a").config, c2);
  // Records of the requested batch win over faster-per-image records of another batch.
  EXPECT_EQ(best.at("b").config, c4);
  q.batch = 4;
  EXPECT_EQ(best_records(rs, q).at("b").config, c1);
  // Only another batch: the fastest per image.
  q.batch = 2;
  EXPECT_EQ(best_records(rs, q).at("b").config, c1);
  // A config is judged by the median of its records: three runs of 1, 5 and 5 ms lose to
  // one of 2 ms.
  const std::vector<Record> noisy = {record("n", c1, 1e-3), record("n", c1, 5e-3),
                                     record("n", c1, 5e-3), record("n", c2, 2e-3)};
  q.batch = 1;
  const auto n = best_records(noisy, q).at("n");
  EXPECT_EQ(n.config, c2);
  EXPECT_DOUBLE_EQ(n.median, 2e-3);
  const std::vector<Record> twice = {record("n", c1, 1e-3), record("n", c1, 4e-3)};
  EXPECT_DOUBLE_EQ(best_records(twice, q).at("n").median, 2.5e-3);
  // Records timed inside the model win over records of kernels timed alone.
  std::vector<Record> modes = {record("m", c1, 1e-3), record("m", c2, 2e-3)};
  modes.push_back(record("m", c1, 3e-3));
  modes.back().mode = "model";
  modes.push_back(record("m", c2, 2.5e-3));
  modes.back().mode = "model";
  const Record chosen = best_records(modes, q).at("m");
  EXPECT_EQ(chosen.config, c2);
  EXPECT_EQ(chosen.mode, "model");
  q.target = target("Other CPU");
  q.batch = 1;
  const auto other = best_configs(rs, q);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other.at("a"), c3);
}

}  // namespace
}  // namespace yoloc::tuner
