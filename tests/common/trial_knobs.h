// The batch and ZeRO knobs of a trial's ds_config as the data layer reads them,
// for the tests of the reader (profiler) and of the windows built on it (gui):
// their configs all bucket by 5e8 to reduce and 2e8 to gather, with overlap on.
#pragma once

#include <gtest/gtest.h>

#include "profiler/tables/trial_config.h"

namespace hybrid::test {

inline void expect_trial_knobs(const profiler::TrialConfig& c, int micro_batch, int grad_accum,
                               int zero_stage) {
  EXPECT_EQ(c.micro_batch, micro_batch);
  EXPECT_EQ(c.grad_accum, grad_accum);
  EXPECT_EQ(c.zero_stage, zero_stage);
  EXPECT_EQ(c.reduce_bucket, 5e8);
  EXPECT_EQ(c.allgather_bucket, 2e8);
  EXPECT_EQ(c.overlap_comm, true);
}

}  // namespace hybrid::test
