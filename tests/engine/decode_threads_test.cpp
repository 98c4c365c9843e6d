// DecodeThreads (engine/generate/decode_threads.h): fed step times of a
// machine where all threads are faster, one where one thread is, and one that
// changes from the first to the second, it keeps the faster count, tries the
// other for 3 steps at the documented intervals, and follows the change; a
// single lucky step on the other count does not switch it. Engine::generate
// keeps one choice across its calls.
#include "engine/generate/decode_threads.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <functional>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace hybrid::engine {
namespace {

// The counts chosen over `steps` steps whose time is ms(threads, step).
std::vector<int> run(int most, int steps, const std::function<double(int, int)>& ms) {
  DecodeThreads d(most);
  std::vector<int> used;
  for (int s = 0; s < steps; ++s) {
    used.push_back(d.next());
    d.record(ms(used.back(), s));
  }
  return used;
}

TEST(DecodeThreads, AnIdleMachineKeepsAllThreadsAndTriesOneAtDoublingIntervals) {
  const auto used = run(2, 200, [](int threads, int) { return threads == 2 ? 10.0 : 17.0; });
  std::vector<int> tries;
  for (int s = 0; s < int(used.size()); ++s)
    if (used[size_t(s)] == 1) tries.push_back(s);
  // Three steps on one thread after 4 steps, then after 8, 16, 32, 64, 64
  // steps on two.
  EXPECT_EQ(tries, (std::vector<int>{4, 5, 6, 15, 16, 17, 34, 35, 36, 69, 70, 71, 136, 137, 138}));
}

TEST(DecodeThreads, ABusyMachineSwitchesToOneThreadAtTheFirstTry) {
  const auto used = run(2, 100, [](int threads, int) { return threads == 2 ? 106.0 : 49.0; });
  for (int s = 0; s < 4; ++s) EXPECT_EQ(used[size_t(s)], 2) << s;
  int on_one = 0;
  for (int s = 4; s < 100; ++s) on_one += used[size_t(s)] == 1;
  // On two threads only for the tries: 3 steps after 4, 8, 16 and 32 steps on one.
  EXPECT_EQ(on_one, 96 - 12);
}

TEST(DecodeThreads, FollowsTheLoadWhenItChanges) {
  // Idle for 100 steps, busy after.
  const auto used = run(2, 300, [](int threads, int s) {
    return s < 100 ? (threads == 2 ? 10.0 : 17.0) : (threads == 2 ? 106.0 : 49.0);
  });
  // Two threads for longer than a try: not after the longest interval (and a
  // try) past the change.
  int run = 0, last_long_run_end = -1;
  for (int s = 0; s < 300; ++s) {
    run = used[size_t(s)] == 2 ? run + 1 : 0;
    if (run > DecodeThreads::kTrySteps) last_long_run_end = s;
  }
  EXPECT_GT(last_long_run_end, 100) << "two threads while the machine was idle";
  EXPECT_LE(last_long_run_end, 100 + DecodeThreads::kLongestRetry + DecodeThreads::kTrySteps);
  EXPECT_EQ(used.back(), 1);
}

TEST(DecodeThreads, OneLuckyStepOfATryDoesNotSwitch) {
  // One thread: slow but for the first step of each try.
  DecodeThreads d(2);
  int tries = 0, in_try = 0;
  for (int s = 0; s < 100; ++s) {
    const int t = d.next();
    in_try = t == 1 ? in_try + 1 : 0;
    tries += in_try == 1;
    d.record(t == 2 ? 10.0 : (in_try == 1 ? 5.0 : 17.0));
    ASSERT_TRUE(t == 2 || in_try <= DecodeThreads::kTrySteps) << "switched at step " << s;
  }
  EXPECT_EQ(tries, 4);
}

TEST(DecodeThreads, OneThreadLeavesNothingToChoose) {
  for (int t : run(1, 50, [](int, int s) { return double(50 - s); })) EXPECT_EQ(t, 1);
}

// Each decode step's thread count over three generate calls is what one
// DecodeThreads gives fed the steps' times in order: the second call goes on
// from where the first left its choice (a chooser made afresh would try one
// thread at the fourth step of every call).
TEST(DecodeThreads, TheEngineKeepsItsChoiceFromOneGenerateCallToTheNext) {
  const auto cfg = test::tiny_config({{"hybrid", {{"threads", 2}}}});
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "one thread: nothing to choose";
  DecodeThreads replay(omp_get_max_threads());
  GenerationParams p;
  p.max_new_tokens = 9;
  for (int call = 0; call < 3; ++call) {
    const GenerationResult r = e->generate({{1, 2, 3}}, p);
    ASSERT_EQ(r.decode_threads.size(), r.tpot_ms.size());
    ASSERT_GE(r.tpot_ms.size(), 7u);
    for (size_t s = 0; s < r.tpot_ms.size(); ++s) {
      EXPECT_EQ(r.decode_threads[s], replay.next()) << "call " << call << ", step " << s;
      replay.record(r.tpot_ms[s]);
    }
  }
}

}  // namespace
}  // namespace hybrid::engine
