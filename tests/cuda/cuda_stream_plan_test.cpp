// The plan of a network's launches over several streams (runtime/cuda/stream_plan.h): every pair
// of launches that touch the same bytes, one of them writing, stays ordered.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/stream_plan.h"

namespace yoloc::runtime::cuda {
namespace {

// A launch reading buffers `in` and writing buffer `out`; buffer b is bytes [100 b, 100 b + 100).
LaunchAccess io(std::vector<uint64_t> in, uint64_t out) {
  LaunchAccess a;
  for (uint64_t b : in) a.reads.push_back({100 * b, 100 * b + 100});
  a.writes.push_back({100 * out, 100 * out + 100});
  return a;
}

// happens[i][j]: launch i is finished before launch j starts, by the streams' order and the
// waits (the transitive closure).
std::vector<std::vector<bool>> happens_before(const StreamPlan& p) {
  const size_t n = p.steps.size();
  std::vector<std::vector<bool>> hb(n, std::vector<bool>(n, false));
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < j; ++i) {
      bool direct = p.steps[i].stream == p.steps[j].stream;
      for (int w : p.steps[j].waits) direct = direct || static_cast<size_t>(w) == i;
      if (!direct) continue;
      hb[i][j] = true;
      for (size_t k = 0; k < i; ++k) hb[k][j] = hb[k][j] || hb[k][i];
    }
  }
  return hb;
}

bool touches(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a)
    for (const ByteRange& y : b)
      if (x.begin < y.end && y.begin < x.end) return true;
  return false;
}

TEST(StreamPlan, ChainStaysOnOneStream) {
  const StreamPlan p = plan_streams({io({0}, 1), io({1}, 2), io({2}, 3)}, 4);
  EXPECT_EQ(p.streams, 1);
  for (const StreamStep& s : p.steps) {
    EXPECT_EQ(s.stream, 0);
    EXPECT_TRUE(s.waits.empty());
    EXPECT_FALSE(s.signals);
  }
}

TEST(StreamPlan, BranchesOfADiamondOverlap) {
  // 0 writes A; 1 and 2 read A (B, C); 3 reads B and C.
  const StreamPlan p = plan_streams({io({9}, 0), io({0}, 1), io({0}, 2), io({1, 2}, 3)}, 4);
  ASSERT_EQ(p.steps.size(), 4u);
  EXPECT_EQ(p.streams, 2);
  EXPECT_EQ(p.steps[0].stream, 0);
  EXPECT_EQ(p.steps[1].stream, 0);
  EXPECT_EQ(p.steps[2].stream, 1);
  EXPECT_EQ(p.steps[2].waits, std::vector<int>{0});
  // 3 follows its latest dependency (2, stream 1) and waits for 1 on stream 0.
  EXPECT_EQ(p.steps[3].stream, 1);
  EXPECT_EQ(p.steps[3].waits, std::vector<int>{1});
  EXPECT_TRUE(p.steps[0].signals);
  EXPECT_TRUE(p.steps[1].signals);
  EXPECT_FALSE(p.steps[2].signals);
}

TEST(StreamPlan, OverwritingBytesAnotherLaunchReadsWaitsForIt) {
  // 0 writes A; 1 reads A into B; 2, independent of 1 by values, reuses A's bytes (the memory
  // plan's reuse): it must wait for 1's read (write after read).
  const StreamPlan p = plan_streams({io({9}, 0), io({0}, 1), io({8}, 0)}, 4);
  const auto hb = happens_before(p);
  EXPECT_TRUE(hb[1][2]);
  EXPECT_TRUE(hb[0][2]);
}

TEST(StreamPlan, OneStreamWhenCappedAtOne) {
  const StreamPlan p = plan_streams({io({9}, 0), io({0}, 1), io({0}, 2), io({1, 2}, 3)}, 1);
  EXPECT_EQ(p.streams, 1);
  for (const StreamStep& s : p.steps) {
    EXPECT_EQ(s.stream, 0);
    EXPECT_TRUE(s.waits.empty());
  }
}

TEST(StreamPlan, RandomProgramsKeepEveryConflictOrderedAndUseFewWaits) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 30), buffers = 2 + static_cast<int>(rng() % 10);
    std::vector<LaunchAccess> ls;
    for (int j = 0; j < n; ++j) {
      std::vector<uint64_t> in;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) in.push_back(rng() % buffers);
      ls.push_back(io(in, rng() % buffers));
      if (rng() % 5 == 0) ls.back().writes.push_back({rng() % 1000, 1000});  // a wide write
    }
    const int max_streams = 1 + static_cast<int>(rng() % 4);
    const StreamPlan p = plan_streams(ls, max_streams);
    ASSERT_EQ(p.steps.size(), ls.size());
    EXPECT_LE(p.streams, max_streams);
    const auto hb = happens_before(p);
    for (int j = 0; j < n; ++j) {
      const StreamStep& s = p.steps[static_cast<size_t>(j)];
      EXPECT_GE(s.stream, 0);
      EXPECT_LT(s.stream, p.streams);
      for (int w : s.waits) {
        EXPECT_LT(w, j);
        EXPECT_NE(p.steps[static_cast<size_t>(w)].stream, s.stream) << "a wait on its own stream";
        EXPECT_TRUE(p.steps[static_cast<size_t>(w)].signals);
      }
      for (int i = 0; i < j; ++i) {
        const LaunchAccess &a = ls[static_cast<size_t>(i)], &b = ls[static_cast<size_t>(j)];
        const bool conflict = touches(a.writes, b.reads) || touches(a.writes, b.writes) ||
                              touches(a.reads, b.writes);
        if (conflict) {
          EXPECT_TRUE(hb[static_cast<size_t>(i)][static_cast<size_t>(j)])
              << "trial " << trial << ": launch " << j << " may run before " << i;
        }
      }
    }
  }
}

// A manifest whose program has one launch reading arena bytes [0, 64) and writing [64, 128).
artifact::Manifest one_launch(const nlohmann::json& writes) {
  artifact::Manifest m;
  m.inputs = {{"x", "float32", {16}}};
  m.outputs = {{"y", "float32", {16}}};
  m.blobs = {{"cuda_module_0", "cubin", 0, 16}, {"weights", "weights", 64, 0}};
  nlohmann::json launch = {
      {"module", 0},
      {"symbol", "k"},
      {"grid", {1, 1, 1}},
      {"block", {32, 1, 1}},
      {"shared", 0},
      {"args",
       {{{"buffer", "arena"}, {"offset", 0}, {"bytes", 64}},
        {{"buffer", "arena"}, {"offset", 64}, {"bytes", 64}}}}};
  if (!writes.is_null()) launch["writes"] = writes;
  m.program = {{"kind", "cuda"},        {"arch", "sm_90"},
               {"modules", {"cuda_module_0"}}, {"arena_bytes", 128},
               {"inputs", {{{"offset", 0}}}},  {"outputs", {{{"offset", 64}}}},
               {"launches", {launch}}};
  return m;
}

TEST(CudaProgramWrites, ParsedAndWrittenBack) {
  const CudaProgram p = parse_cuda_program(one_launch(nlohmann::json::array({1})), "a.ycm");
  ASSERT_TRUE(p.launches.at(0).writes.has_value());
  EXPECT_EQ(*p.launches[0].writes, std::vector<int>{1});
  EXPECT_EQ(cuda_program_to_json(p)["launches"][0]["writes"], nlohmann::json({1}));
  // An artifact of an earlier version says nothing: one stream.
  EXPECT_FALSE(parse_cuda_program(one_launch(nullptr), "a.ycm").launches[0].writes.has_value());
}

// The accesses the stream plan takes: the written arg's bytes as writes, the others as reads;
// none without "writes".
TEST(CudaProgramWrites, LaunchAccessesSplitReadsAndWrites) {
  const auto access =
      launch_accesses(parse_cuda_program(one_launch(nlohmann::json::array({1})), "a.ycm"));
  ASSERT_TRUE(access.has_value());
  ASSERT_EQ(access->size(), 1u);
  ASSERT_EQ((*access)[0].reads.size(), 1u);
  ASSERT_EQ((*access)[0].writes.size(), 1u);
  EXPECT_EQ((*access)[0].reads[0].begin, 0u);
  EXPECT_EQ((*access)[0].reads[0].end, 64u);
  EXPECT_EQ((*access)[0].writes[0].begin, 64u);
  EXPECT_EQ((*access)[0].writes[0].end, 128u);
  EXPECT_FALSE(launch_accesses(parse_cuda_program(one_launch(nullptr), "a.ycm")).has_value());
}

// "lanes" (informational): read, written back only above 1, absent in earlier artifacts (1).
TEST(CudaProgramLanes, ParsedAndWrittenBack) {
  artifact::Manifest m = one_launch(nullptr);
  EXPECT_EQ(parse_cuda_program(m, "a.ycm").lanes, 1);
  EXPECT_FALSE(cuda_program_to_json(parse_cuda_program(m, "a.ycm")).contains("lanes"));
  m.program["lanes"] = 2;
  EXPECT_EQ(cuda_program_to_json(parse_cuda_program(m, "a.ycm"))["lanes"], 2);
  m.program["lanes"] = 0;
  EXPECT_THROW(parse_cuda_program(m, "a.ycm"), UserError);
}

TEST(CudaProgramWrites, AnIndexOutsideTheArgsIsAClearError) {
  for (const nlohmann::json& bad : {nlohmann::json::array({2}), nlohmann::json::array({-1}),
                                    nlohmann::json(1), nlohmann::json::array({"0"})}) {
    try {
      parse_cuda_program(one_launch(bad), "a.ycm");
      ADD_FAILURE() << "accepted writes " << bad.dump();
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("program.launches[0].writes"), std::string::npos)
          << e.what();
    }
  }
}

// "persistent" (a kernel that walks its tiles, grid x capped at launch): read, written back only
// when set, absent in earlier artifacts (false), a clear error when not a boolean.
TEST(CudaProgramPersistent, ParsedWrittenBackAndChecked) {
  artifact::Manifest m = one_launch(nullptr);
  EXPECT_FALSE(parse_cuda_program(m, "a.ycm").launches[0].persistent);
  EXPECT_FALSE(
      cuda_program_to_json(parse_cuda_program(m, "a.ycm"))["launches"][0].contains("persistent"));
  m.program["launches"][0]["persistent"] = true;
  const CudaProgram p = parse_cuda_program(m, "a.ycm");
  EXPECT_TRUE(p.launches[0].persistent);
  EXPECT_EQ(cuda_program_to_json(p)["launches"][0]["persistent"], true);
  m.program["launches"][0]["persistent"] = 1;
  try {
    parse_cuda_program(m, "a.ycm");
    ADD_FAILURE() << "accepted \"persistent\": 1";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("program.launches[0].persistent"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace yoloc::runtime::cuda
