// Tuning records: JSON-lines round trip, version filtering, torn lines, best record selection.
#include <fmt/format.h>
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

TEST(TunerRecords, NumbersOutOfTheirRangeAreMalformed) {
  // Found by the records parser's fuzzer: a float where an integer goes was cast (undefined).
  TempDir dir;
  const std::string path = dir.path("r.jsonl");
  nlohmann::json cur = record_to_json(record("k", ScheduleConfig({{"u", 1}}), 1e-3));
  nlohmann::json huge_format = cur, huge_batch = cur, float_threads = cur, big_threads = cur;
  huge_format["format"] = 1.1e48;
  huge_batch["batch"] = 1e120;
  float_threads["threads"] = 2.5;
  big_threads["threads"] = int64_t{1} << 40;
  {
    std::ofstream f(path);
    for (const auto& j : {cur, huge_format, huge_batch, float_threads, big_threads})
      f << j.dump() << "\n";
  }
  const RecordSet set = load_records(path);
  EXPECT_EQ(set.records.size(), 1u);
  EXPECT_EQ(set.stale, 1);  // a format that is not this one's
  EXPECT_EQ(set.malformed, 3);
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

// Records of several tuning runs (machines of one kind differ by a few per cent) are compared by
// their time relative to their own run's default config; records that cannot be (no run id, or
// a run without its default) fall back to the absolute times.
TEST(TunerRecords, RunsComparedByTheirOwnDefault) {
  const ScheduleConfig def({{"u", 0}}), c1({{"u", 1}}), c2({{"u", 2}});
  const auto in_run = [](Record r, const std::string& run, bool is_default = false) {
    r.run = run;
    r.is_default = is_default;
    return r;
  };
  // Run A on a faster machine: c1 is 0.80 of the default; run B, 10 % slower: c2 is 0.76 of it.
  const std::vector<Record> two_runs = {
      in_run(record("r", def, 1.0e-3), "A", true), in_run(record("r", c1, 0.80e-3), "A"),
      in_run(record("r", def, 1.1e-3), "B", true), in_run(record("r", c2, 0.84e-3), "B")};
  const RecordQuery q{target(), 1, 0};
  const Record best = best_records(two_runs, q).at("r");
  EXPECT_EQ(best.config, c2);
  EXPECT_DOUBLE_EQ(best.median, 0.84e-3);  // its own time, not the ratio
  // A record without a run id: absolute times.
  std::vector<Record> old = two_runs;
  old.push_back(record("r", c1, 0.81e-3));
  EXPECT_EQ(best_records(old, q).at("r").config, c1);
  // Run B without its default: absolute times.
  std::vector<Record> no_yardstick = two_runs;
  no_yardstick.erase(no_yardstick.begin() + 2);
  EXPECT_EQ(best_records(no_yardstick, q).at("r").config, c1);
  // One run: its times as they are.
  const std::vector<Record> one_run = {in_run(record("r", def, 1.0e-3), "A", true),
                                       in_run(record("r", c1, 0.80e-3), "A"),
                                       in_run(record("r", c2, 0.84e-3), "A")};
  EXPECT_EQ(best_records(one_run, q).at("r").config, c1);
  // Both fields survive the file.
  TempDir dir;
  {
    RecordWriter w(dir.path("r.jsonl"));
    w.write(two_runs[0]);
    w.write(record("r", c1, 1e-3));
  }
  const RecordSet set = load_records(dir.path("r.jsonl"));
  ASSERT_EQ(set.records.size(), 2u);
  EXPECT_EQ(set.records[0].run, "A");
  EXPECT_TRUE(set.records[0].is_default);
  EXPECT_EQ(set.records[1].run, "");
  EXPECT_FALSE(set.records[1].is_default);
}

// A knob added to a template after records were stored has a value when absent
// (codegen::Knob::absent): a stored config without it is read through the space as having that
// value; one without a knob that has none stays outside the space; values a config sets are kept.
TEST(TunerRecords, ConfigsStoredBeforeAKnobExisted) {
  codegen::ScheduleSpace space;
  space.knobs.push_back({"tile", "", {16, 32}});
  space.knobs.push_back({"late", "", {0, 1}, 0});
  TempDir dir;
  const std::string path = dir.path("old.jsonl");
  {
    RecordWriter w(path);
    w.write(record("k", ScheduleConfig({{"tile", 32}}), 1e-3));
  }
  const RecordSet set = load_records(path);
  ASSERT_EQ(set.records.size(), 1u);
  const ScheduleConfig& stored = set.records[0].config;
  EXPECT_FALSE(stored.in_space(space));
  const ScheduleConfig read = space.complete(stored);
  EXPECT_TRUE(read.in_space(space));
  EXPECT_EQ(read, ScheduleConfig({{"tile", 32}, {"late", 0}}));
  EXPECT_EQ(space.complete(ScheduleConfig({{"tile", 16}, {"late", 1}})),
            ScheduleConfig({{"tile", 16}, {"late", 1}}));
  EXPECT_FALSE(space.complete(ScheduleConfig({{"late", 1}})).in_space(space));
  EXPECT_EQ(space.complete(ScheduleConfig({{"late", 1}})), ScheduleConfig({{"late", 1}}));
}

// The same config stored before and after a knob was added is one config once completed
// (complete_configs): its records' times pool, and the ranking sees it once. On the H200 an old
// config's records without "pers" and its re-measurement with pers=0 were ranked apart, so the
// old run's flattering ratio alone decided.
TEST(TunerRecords, CompletedConfigsPoolAcrossAKnobsArrival) {
  codegen::ScheduleSpace space;
  space.knobs.push_back({"u", "", {0, 1, 2}});
  space.knobs.push_back({"late", "", {0, 1}, 0});
  const auto in_run = [](Record r, const std::string& run, bool is_default = false) {
    r.run = run;
    r.is_default = is_default;
    return r;
  };
  const ScheduleConfig old_def({{"u", 0}}), old_c1({{"u", 1}});
  const ScheduleConfig def({{"u", 0}, {"late", 0}}), c1({{"u", 1}, {"late", 0}}),
      c2({{"u", 2}, {"late", 1}});
  // Run A (before the knob) timed its default slow: c1 at 0.70 of it. Run B: c1 again at 0.90
  // of the default, c2 at 0.775.
  std::vector<Record> rs = {
      in_run(record("r", old_def, 1.0e-3), "A", true), in_run(record("r", old_c1, 0.70e-3), "A"),
      in_run(record("r", def, 0.8e-3), "B", true), in_run(record("r", c1, 0.72e-3), "B"),
      in_run(record("r", c2, 0.62e-3), "B")};
  const RecordQuery q{target(), 1, 0};
  // Apart, c1's old record (0.70) outranks c2 (0.775).
  EXPECT_EQ(best_records(rs, q).at("r").config, old_c1);
  complete_configs(rs, {{"r", space}, {"other", space}});
  EXPECT_EQ(rs[1].config, c1);
  // Pooled, c1's ratios are 0.70 and 0.90 (median 0.80): c2 ranks first.
  const auto ranked = ranked_records(rs, q, 5).at("r");
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].config, c2);
  EXPECT_EQ(ranked[1].config, c1);
  EXPECT_EQ(ranked[2].config, def);
  EXPECT_EQ(best_records(rs, q).at("r").config, c2);
}

TEST(TunerRecords, WorkloadKeyAtBatch) {
  const std::string k1 =
      "cuda_conv2d_nhwc f16->f16 n1 c64 h80 w80 k144 3x3 s1x1 p1x1 d1x1 silu in64+0 out144+0";
  EXPECT_EQ(workload_key_batch(k1), 1);
  EXPECT_EQ(workload_key_at_batch(k1, 32),
            "cuda_conv2d_nhwc f16->f16 n32 c64 h80 w80 k144 3x3 s1x1 p1x1 d1x1 silu in64+0 "
            "out144+0");
  // "n32" elsewhere (here a channel count that reads like a batch token) stays as it is.
  const std::string k32 = "cuda_conv2d_nhwc f32->f16 n32 c32 h8 w8 k32 1x1 s1x1 p0x0 d1x1 "
                          "none in32+0 out32+0 n32";
  EXPECT_EQ(workload_key_batch(k32), 32);
  EXPECT_EQ(workload_key_at_batch(k32, 128), "cuda_conv2d_nhwc f32->f16 n128 c32 h8 w8 k32 1x1 "
                                             "s1x1 p0x0 d1x1 none in32+0 out32+0 n32");
  // Keys without a batch token: other templates, a malformed token, no dtype pair.
  for (const std::string& k :
       {std::string("generic Sigmoid n32 f16[32,64,80,80]"), std::string("cuda_conv2d_nhwc"),
        std::string("cuda_conv2d_nhwc f16->f16"), std::string("cuda_conv2d_nhwc f16->f16 n"),
        std::string("cuda_conv2d_nhwc f16->f16 n3x c64"),
        std::string("cuda_conv2d_nhwc f16 n32 c64"), std::string("conv2d_nchw16c_f32 n32 c64")}) {
    EXPECT_EQ(workload_key_batch(k), std::nullopt) << k;
    EXPECT_EQ(workload_key_at_batch(k, 8), std::nullopt) << k;
  }
}

TEST(TunerRecords, NearestBatchRecords) {
  const auto key = [](int64_t n, int c = 64) {
    return fmt::format("cuda_conv2d_nhwc f16->f16 n{} c{} h80 w80 k144 3x3 s1x1 p1x1 d1x1 silu "
                       "in{}+0 out144+0",
                       n, c, c);
  };
  const auto at = [&](int64_t n, ScheduleConfig cfg, double median, int c = 64) {
    Record r = record(key(n, c), std::move(cfg), median);
    r.batch = n;
    return r;
  };
  const ScheduleConfig c1({{"u", 1}}), c2({{"u", 2}}), c3({{"u", 3}}), c4({{"u", 4}}),
      c5({{"u", 5}});
  std::vector<Record> rs = {at(1, c1, 1e-5), at(32, c2, 2e-4), at(32, c3, 1e-4)};
  // A failed record of batch 16 does not make it a tuned batch.
  rs.push_back(at(16, c4, 0));
  rs.back().error = "timeout";
  // Another workload (c128) at batch 8: never applies to c64.
  rs.push_back(at(8, c5, 1e-5, 128));
  const RecordQuery q{target(), 8, 0};
  // |log(8/1)| = 2.08 > |log(8/32)| = 1.39: batch 32's best (c3, the faster there).
  auto near = nearest_batch_records(rs, q, {key(8), key(128), key(2), key(1)});
  ASSERT_TRUE(near.contains(key(8)));
  EXPECT_EQ(near.at(key(8)).config, c3);
  EXPECT_EQ(near.at(key(8)).batch, 32);
  EXPECT_EQ(near.at(key(8)).key, key(32));
  EXPECT_EQ(near.at(key(128)).config, c3);
  EXPECT_EQ(near.at(key(128)).batch, 32);
  // |log(2/1)| = 0.69 < |log(2/32)| = 2.77.
  EXPECT_EQ(near.at(key(2)).config, c1);
  EXPECT_EQ(near.at(key(2)).batch, 1);
  // An exact record wins: no fallback for batch 1.
  EXPECT_FALSE(near.contains(key(1)));
  EXPECT_EQ(near.size(), 3u);
  // Equally far batches (4 and 16 from 8): the larger.
  const std::vector<Record> tie = {at(4, c1, 1e-5), at(16, c2, 1e-3)};
  EXPECT_EQ(nearest_batch_records(tie, q, {key(8)}).at(key(8)).config, c2);
  // Only the c128 workload has records (of batch 8): the c64 key gets nothing from them,
  // c128 at 8 has its own, c128 at 4 takes them.
  const std::vector<Record> other = {at(8, c5, 1e-5, 128)};
  const auto o = nearest_batch_records(other, q, {key(8), key(8, 128), key(4, 128)});
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o.at(key(4, 128)).config, c5);
  // Batch 128 and 8 are 16x apart, 1 and 128 farther: batch 1 keeps its default.
  const std::vector<Record> large = {at(128, c2, 1e-3)};
  const auto l = nearest_batch_records(large, q, {key(8), key(1)});
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l.at(key(8)).config, c2);
  // Records of other hardware never apply; keys without a batch token get nothing.
  RecordQuery elsewhere = q;
  elsewhere.target = target("Other CPU");
  EXPECT_TRUE(nearest_batch_records(rs, elsewhere, {key(8)}).empty());
  Record generic = record("generic Sigmoid f16[1,64,80,80]", c1, 1e-5);
  EXPECT_TRUE(nearest_batch_records({generic}, q, {"generic Sigmoid f16[8,64,80,80]"}).empty());
}

}  // namespace
}  // namespace yoloc::tuner
