// DecodeThreads (engine/generate/decode_threads.h): fed step times of a
// machine where all threads are faster, one where one thread is, and one that
// changes from the first to the second, it keeps the faster count, tries the
// other at the documented intervals, and follows the change.
#include "engine/generate/decode_threads.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

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
  // After 4 steps, then 8, 16, 32, 64, 64 steps on two threads.
  EXPECT_EQ(tries, (std::vector<int>{4, 13, 30, 63, 128, 193}));
}

TEST(DecodeThreads, ABusyMachineSwitchesToOneThreadAtTheFirstTry) {
  const auto used = run(2, 100, [](int threads, int) { return threads == 2 ? 106.0 : 49.0; });
  for (int s = 0; s < 4; ++s) EXPECT_EQ(used[size_t(s)], 2) << s;
  int on_one = 0;
  for (int s = 4; s < 100; ++s) on_one += used[size_t(s)] == 1;
  EXPECT_GE(on_one, 96 - 6) << "one step on two threads at each try only";
}

TEST(DecodeThreads, FollowsTheLoadWhenItChanges) {
  // Idle for 100 steps, busy after.
  const auto used = run(2, 300, [](int threads, int s) {
    return s < 100 ? (threads == 2 ? 10.0 : 17.0) : (threads == 2 ? 106.0 : 49.0);
  });
  // At most the longest interval (and the window) after the change, on one
  // thread for good but for the tries.
  int last_two_in_a_row = -1;
  for (int s = 1; s < 300; ++s)
    if (used[size_t(s)] == 2 && used[size_t(s) - 1] == 2) last_two_in_a_row = s;
  EXPECT_LE(last_two_in_a_row, 100 + DecodeThreads::kLongestRetry + DecodeThreads::kWindow);
  EXPECT_EQ(used.back(), 1);
}

TEST(DecodeThreads, OneThreadLeavesNothingToChoose) {
  for (int t : run(1, 50, [](int, int s) { return double(50 - s); })) EXPECT_EQ(t, 1);
}

}  // namespace
}  // namespace hybrid::engine
