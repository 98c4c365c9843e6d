// Chrome trace export: parses back as JSON, every complete event carries the
// fields Perfetto needs (ph, ts, dur, pid, tid, name), ts is sorted, lanes and
// ranks are named by metadata events, and ranks' clocks are aligned.
#include "profiler/chrome_trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "sample_profile.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

using nlohmann::json;

Event event(int rank, uint16_t lane, Category cat, uint32_t name, int64_t start, int64_t dur) {
  Event e;
  e.rank = uint16_t(rank);
  e.lane = lane;
  e.category = cat;
  e.name_id = name;
  e.start_ns = start;
  e.dur_ns = dur;
  e.step = 1;
  return e;
}

EventSet sample_events() {
  EventSet s;
  s.names = {"forward h.0.attn", "all_reduce", "gemm kernel"};
  Event fwd = event(0, kLaneCompute, Category::forward, 0, 5000, 2000);
  fwd.module_id = 3;
  fwd.flops = 1'000'000'000;
  Event ar = event(0, kLaneComm, Category::comm, 1, 1500, 3000);
  ar.bytes = 1 << 20;
  Event k0 = event(0, kLaneGpuBase, Category::kernel, 2, 2500, 1000);
  k0.step = -1;  // outside any step: no "step" arg
  Event fwd1 = event(1, kLaneCompute, Category::forward, 0, 1000, 2500);
  fwd1.module_id = 3;
  Event k1 = event(1, kLaneGpuBase + 1, Category::kernel, 2, 4000, 500);
  s.events = {fwd, ar, k0, fwd1, k1};  // not in time order
  return s;
}

const std::vector<RankInfo> kRanks = {{0, "a", 10, 1'700'000'000'000'000'000},
                                      {1, "a", 11, 1'700'000'000'001'000'000}};  // +1 ms

std::vector<json> complete_events(const json& trace) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") out.push_back(e);
  return out;
}

const json* find_x(const std::vector<json>& xs, int pid, int tid) {
  for (const auto& e : xs)
    if (e.at("pid") == pid && e.at("tid") == tid) return &e;
  return nullptr;
}

std::string metadata(const json& trace, const std::string& kind, int pid, int tid) {
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == kind && e.at("pid") == pid && e.at("tid") == tid)
      return e.at("args").at("name").get<std::string>();
  return "(none)";
}

TEST(ChromeTrace, ParsesWithRequiredFieldsSortedAndNamedLanes) {
  const auto modules = test::sample_modules();
  RunInfo run;
  run.id = 5;
  run.name = "tiny";
  const json trace = chrome_trace(sample_events(), modules, kRanks, &run);
  const json parsed = json::parse(trace.dump());  // valid JSON text
  ASSERT_EQ(parsed, trace);
  ASSERT_TRUE(parsed.at("traceEvents").is_array());
  EXPECT_EQ(parsed.at("displayTimeUnit"), "ms");
  EXPECT_EQ(parsed.at("otherData").at("run_id"), 5);

  // Metadata first, then complete events.
  bool seen_x = false;
  for (const auto& e : parsed.at("traceEvents")) {
    if (e.at("ph") == "X")
      seen_x = true;
    else
      EXPECT_FALSE(seen_x) << "metadata after a complete event: " << e;
  }
  const auto xs = complete_events(parsed);
  ASSERT_EQ(xs.size(), 5u);
  double last_ts = -1;
  for (const auto& e : xs) {
    for (const char* key : {"name", "ph", "ts", "dur", "pid", "tid", "cat"})
      EXPECT_TRUE(e.contains(key)) << key << " missing in " << e;
    EXPECT_TRUE(e.at("ts").is_number());
    EXPECT_TRUE(e.at("dur").is_number());
    EXPECT_TRUE(e.at("pid").is_number_integer());
    EXPECT_TRUE(e.at("tid").is_number_integer());
    EXPECT_GE(e.at("ts").get<double>(), last_ts) << "not sorted by ts";
    last_ts = e.at("ts").get<double>();
  }

  // ns → µs, module names, args.
  const json* fwd = find_x(xs, 0, kLaneCompute);
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->at("name"), "forward h.0.attn");
  EXPECT_EQ(fwd->at("cat"), "forward");
  EXPECT_DOUBLE_EQ(fwd->at("ts").get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(fwd->at("dur").get<double>(), 2.0);
  EXPECT_EQ(fwd->at("args").at("module"), "h.0.attn");
  EXPECT_EQ(fwd->at("args").at("step"), 1);
  EXPECT_EQ(fwd->at("args").at("flops"), 1'000'000'000u);
  EXPECT_DOUBLE_EQ(fwd->at("args").at("TFLOP/s").get<double>(), 500.0);  // 1e9 FLOP in 2 µs
  const json* ar = find_x(xs, 0, kLaneComm);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->at("args").at("bytes"), 1u << 20);
  EXPECT_FALSE(ar->at("args").contains("module"));
  EXPECT_FALSE(find_x(xs, 0, kLaneGpuBase)->at("args").contains("step"));
  // Rank 1's tracer started 1 ms after rank 0's: its events move 1000 µs later.
  EXPECT_DOUBLE_EQ(find_x(xs, 1, kLaneCompute)->at("ts").get<double>(), 1001.0);
  EXPECT_TRUE(parsed.at("otherData").at("clocks_aligned").get<bool>());

  EXPECT_EQ(metadata(parsed, "process_name", 0, 0), "rank 0");
  EXPECT_EQ(metadata(parsed, "process_name", 1, 0), "rank 1");
  EXPECT_EQ(metadata(parsed, "thread_name", 0, kLaneCompute), "compute");
  EXPECT_EQ(metadata(parsed, "thread_name", 0, kLaneComm), "comm");
  EXPECT_EQ(metadata(parsed, "thread_name", 0, kLaneGpuBase), "gpu stream 0");
  EXPECT_EQ(metadata(parsed, "thread_name", 1, kLaneGpuBase + 1), "gpu stream 1");
  EXPECT_EQ(metadata(parsed, "thread_name", 1, kLaneComm), "(none)");  // rank 1 has no comm events
}

TEST(ChromeTrace, WithoutEveryRanksEpochTheClocksAreLeftAlone) {
  const json trace = chrome_trace(sample_events(), {}, std::span(kRanks).first(1));
  const auto xs = complete_events(trace);
  EXPECT_DOUBLE_EQ(find_x(xs, 1, kLaneCompute)->at("ts").get<double>(), 1.0);
  EXPECT_FALSE(trace.at("otherData").at("clocks_aligned").get<bool>());
  EXPECT_EQ(find_x(xs, 0, kLaneCompute)->at("args").at("module"), "#3");  // no module table
  EXPECT_EQ(lane_name(3), "lane 3");
}

TEST(ChromeTrace, WritesAtomicallyAndNamesThePathOnFailure) {
  test::TempDir dir;
  const auto path = dir / "trace.json";
  const json trace = chrome_trace(sample_events());
  write_chrome_trace(path, trace);
  EXPECT_EQ(json::parse(test::read_file(path)), trace);
  write_chrome_trace(path, chrome_trace({}));  // replaces the old file
  EXPECT_EQ(json::parse(test::read_file(path)).at("traceEvents").size(), 0u);
  size_t files = 0;
  for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";

  // Missing folders are created; a path through a file cannot be written.
  write_chrome_trace(dir / "new/dir/trace.json", trace);
  EXPECT_EQ(json::parse(test::read_file(dir / "new/dir/trace.json")), trace);
  std::ofstream(dir / "file") << "not a folder";
  const auto bad = dir / "file/trace.json";
  try {
    write_chrome_trace(bad, trace);
    FAIL() << "expected runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hybrid::profiler
