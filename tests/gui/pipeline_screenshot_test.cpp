// hybrid-view under Xvfb on a pipeline run (two ranks, stages 0 and 1; rows by
// communicator group, a bubble per step): the collectives and timeline windows,
// which name groups, stage bubbles and "rank r · stage s" lanes, render a
// non-blank frame of the requested size without an error. What they say is
// checked on their models (pipeline_view_test.cpp). Skips without Xvfb.
#include <gtest/gtest.h>
#include <stb_image.h>

#include <cmath>

#include "profiler/store/run_store.h"
#include "tests/gui/view_test_util.h"
#include "tests/gui/xvfb_display.h"

namespace hybrid::gui {
namespace {

using test::run_command;
using test::TempDir;

const std::string kViewer = std::string(HYBRID_BINARY_DIR) + "/gui/hybrid-view";

int64_t write_pipeline_run(const std::filesystem::path& db) {
  profiler::RunStore store(db);
  profiler::RunInfo info;
  info.name = "pp2";
  info.world_size = 2;
  info.backend = "cpu";
  const int64_t id = store.create_run(info);
  std::vector<profiler::Event> events;
  for (int r : {0, 1}) {
    profiler::RankInfo rank;
    rank.rank = r;
    rank.pipeline_stage = r;
    store.register_rank(id, rank);
    for (int m = 0; m < 4; ++m) {  // forward micro-batches, staggered by stage (1F1B's fill)
      profiler::Event f;
      f.rank = uint16_t(r);
      f.step = 1;
      f.start_ns = (m + r) * 2'000'000;
      f.dur_ns = 1'000'000;
      f.category = profiler::Category::forward;
      events.push_back(f);
      profiler::Event send = f;
      send.lane = profiler::kLaneComm;
      send.category = profiler::Category::comm;
      send.name_id = 1;
      send.start_ns += 1'000'000;
      send.dur_ns = 200'000;
      send.bytes = 4096;
      events.push_back(send);
    }
  }
  const std::vector<std::string> names = {"forward h.0", "send"};
  store.add_events(id, events, names);
  const std::vector<profiler::StepRow> steps = {{1, 4.0, 1e-3, 1, false, 1.0, 12.0, 1e3, 1e9}};
  store.add_steps(id, steps);
  const std::vector<profiler::StepRankRow> step_ranks = {{1, 0, 8, 3, 4, 3.5},
                                                         {1, 1, 9, 2, 3, 2.5}};
  store.add_step_ranks(id, step_ranks);
  const std::vector<profiler::CommStatRow> comm = {
      {0, "send", 4096, 4, 800'000, 190'000, 210'000, 0.02, 0.02, "intra_host", "pp"},
      {1, "recv", 4096, 4, 800'000, 190'000, 210'000, 0.02, 0.02, "intra_host", "pp"},
      {0, "all_reduce", 16384, 1, 100'000, 100'000, 100'000, 0.16, 0.16, "intra_host", "tied"},
      {1, "all_reduce", 16384, 1, 100'000, 100'000, 100'000, 0.16, 0.16, "intra_host", "tied"},
      {0, "all_reduce", 4, 1, 10'000, 10'000, 10'000, 0, 0, "intra_host", "world"}};
  store.add_comm_stats(id, comm);
  store.finish_run(id, profiler::RunStatus::ok);
  return id;
}

double luma_stddev(const std::filesystem::path& png, int& width) {
  int h = 0, n = 0;
  unsigned char* px = stbi_load(png.c_str(), &width, &h, &n, 3);
  if (!px) return 0;
  double sum = 0, sum2 = 0;
  const size_t count = size_t(width) * size_t(h);
  for (size_t i = 0; i < count; ++i) {
    const double l = 0.299 * px[3 * i] + 0.587 * px[3 * i + 1] + 0.114 * px[3 * i + 2];
    sum += l, sum2 += l * l;
  }
  stbi_image_free(px);
  const double mean = sum / double(count);
  return std::sqrt(std::max(0.0, sum2 / double(count) - mean * mean));
}

TEST(PipelineScreenshots, CollectivesAndTimelineOfAPipelineRun) {
  if (!test::xvfb_installed()) GTEST_SKIP() << "Xvfb is not installed";
  ASSERT_TRUE(test::xvfb_display().ok()) << "Xvfb did not start";
  ASSERT_TRUE(std::filesystem::exists(kViewer)) << kViewer;
  TempDir dir;
  const auto db = dir / "pp.db";
  const int64_t id = write_pipeline_run(db);
  for (const char* window : {"collectives", "timeline"}) {
    const auto png = dir / (std::string("pp_") + window + ".png");
    const auto r = run_command(test::xvfb_display().env_prefix() + kViewer + " " + db + " --run " +
                               std::to_string(id) + " --screenshot " + png + " --window " + window +
                               " --size 1280x800");
    ASSERT_EQ(r.status, 0) << window << "\n" << r.output;
    int width = 0;
    EXPECT_GT(luma_stddev(png, width), 8.0) << window;  // text and tables, not a blank frame
    EXPECT_EQ(width, 1280) << window;
  }
}

}  // namespace
}  // namespace hybrid::gui
