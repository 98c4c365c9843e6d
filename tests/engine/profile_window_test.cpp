// Which steps a run traces: nothing unless something asks, DeepSpeed's
// profile_step for the FLOPs profiler, the third step for a recorded run, the
// trace's length, clipped to the run and offset by a resumed run's steps.
#include "engine/profile_window.h"

#include <gtest/gtest.h>

#include "profiler/tracer.h"

namespace hybrid {
namespace {

TEST(ProfileWindow, NothingAsksNothingTraced) {
  const auto w = ProfileWindow::for_run(engine::Config{}, /*recording=*/false, 0, 10);
  EXPECT_TRUE(w.empty());
  for (int64_t s = 1; s <= 10; ++s) EXPECT_FALSE(w.traced(s));
}

TEST(ProfileWindow, RecordedRunTracesFromTheThirdStepForTraceSteps) {
  engine::Config cfg;  // profiler.trace_steps 2
  auto w = ProfileWindow::for_run(cfg, /*recording=*/true, 0, 10);
  EXPECT_EQ(w.first(), 3);
  EXPECT_FALSE(w.traced(2));
  EXPECT_TRUE(w.traced(3));
  EXPECT_TRUE(w.traced(4));
  EXPECT_FALSE(w.traced(5));
  w = ProfileWindow::for_run(cfg, true, 0, 2);  // a short run: its last step
  EXPECT_EQ(w.first(), 2);
  EXPECT_FALSE(w.traced(3));
  w = ProfileWindow::for_run(cfg, true, 100, 10);  // resumed after step 100
  EXPECT_EQ(w.first(), 103);
  EXPECT_FALSE(w.traced(3));
}

TEST(ProfileWindow, FlopsProfilerTracesItsProfileStepOnly) {
  engine::Config cfg;
  cfg.flops_profiler.enabled = true;
  cfg.flops_profiler.profile_step = 5;
  auto w = ProfileWindow::for_run(cfg, false, 0, 10);
  EXPECT_EQ(w.first(), 5);
  EXPECT_TRUE(w.traced(5));
  EXPECT_FALSE(w.traced(6));
  cfg.profiler.trace = true;  // with a trace: trace_steps from there
  w = ProfileWindow::for_run(cfg, false, 0, 10);
  EXPECT_TRUE(w.traced(6));
  EXPECT_FALSE(w.traced(7));
}

TEST(ProfileWindow, SwitchesTheTracerPerStep) {
  const ProfileWindow w(2, 3);
  profiler::Tracer tracer;
  w.begin_step(tracer, 1);
  EXPECT_FALSE(tracer.enabled());
  EXPECT_EQ(tracer.step(), 1);
  w.begin_step(tracer, 2);
  EXPECT_TRUE(tracer.enabled());
  EXPECT_EQ(tracer.step(), 2);
  ProfileWindow::end_step(tracer);
  EXPECT_FALSE(tracer.enabled());
}

}  // namespace
}  // namespace hybrid
