// A hook for the kill-storm tests (tests/faults/tune_kill_storm_test.cpp): some
// moments of a sweep last microseconds (between two trials; best.json written
// to its temporary file but not yet renamed), too short for a test to SIGKILL
// hybrid-tune there from outside. With HYBRID_TUNE_TEST_PAUSE_S set to a number
// of seconds, hybrid-tune prints "test-pause: <point>" at each such moment,
// holds still that long, then prints "test-pause: <point> over", so that the
// test's kill lands there and the test can tell that it did. Unset (as always
// outside those tests) it does nothing.
#pragma once

#include <ostream>
#include <string_view>

namespace hybrid::autotune {

void test_pause(std::ostream& out, std::string_view point);

}  // namespace hybrid::autotune
