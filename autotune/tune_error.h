// The autotuner's error: a bad search space, autotuning block or command line.
// Messages name the input at fault ("space: zero_optimization.stage: 5 is not
// in 0..3"), so the CLI prints them as they are and exits non-zero.
#pragma once

#include <stdexcept>

namespace hybrid::autotune {

class TuneError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hybrid::autotune
