#include "autotune/test_pause.h"

#include <chrono>
#include <cstdlib>
#include <thread>

namespace hybrid::autotune {

void test_pause(std::ostream& out, std::string_view point) {
  static const double seconds = [] {
    const char* v = std::getenv("HYBRID_TUNE_TEST_PAUSE_S");
    return v ? std::atof(v) : 0.0;
  }();
  if (seconds <= 0) return;
  out << "test-pause: " << point << std::endl;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  out << "test-pause: " << point << " over" << std::endl;
}

}  // namespace hybrid::autotune
