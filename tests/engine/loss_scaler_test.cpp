// The fp16 loss scaler against DeepSpeed's DynamicLossScaler, step by step.
// Expected sequences are derived by hand from DeepSpeed's update_scale: on
// overflow, spend hysteresis and halve once it is spent; after a window of clean
// iterations since the last overflow, double and restore hysteresis.
#include "engine/precision/loss_scaler.h"

#include <gtest/gtest.h>

namespace hybrid::engine {
namespace {

Fp16Config dyn(int power, int window, int hysteresis, bool consecutive = false,
               float min_scale = 1.0f) {
  return {.enabled = true,
          .loss_scale = 0,
          .initial_scale_power = power,
          .loss_scale_window = window,
          .hysteresis = hysteresis,
          .consecutive_hysteresis = consecutive,
          .min_loss_scale = min_scale};
}

struct Expect {
  bool overflow;
  float scale_after;
  int hysteresis_after;
};

void drive(LossScaler& s, const std::vector<Expect>& seq) {
  for (size_t i = 0; i < seq.size(); ++i) {
    s.update(seq[i].overflow);
    EXPECT_EQ(s.scale(), seq[i].scale_after) << "after update " << i;
    EXPECT_EQ(s.hysteresis_left(), seq[i].hysteresis_after) << "after update " << i;
  }
}

TEST(LossScaler, InitialScaleIsTwoToThePower) {
  LossScaler s(dyn(16, 1000, 2));
  EXPECT_TRUE(s.dynamic());
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.hysteresis_left(), 2);
}

TEST(LossScaler, HysteresisDelaysTheFirstHalving) {
  // hysteresis 2: the first overflow only spends hysteresis, the second halves.
  LossScaler s(dyn(4, 1000, 2));
  drive(s, {{true, 16, 1}, {true, 8, 1}, {true, 4, 1}, {false, 4, 1}});
}

TEST(LossScaler, DoublesAfterACleanWindowAndRestoresHysteresis) {
  // window 3. iter 0 overflow (spend), iter 1 overflow (halve: 8), last overflow
  // at iter 1; iters 2, 3 clean; iter 4: (4 - 1) % 3 == 0 → double to 16 and
  // hysteresis back to 2; iters 5, 6 clean; iter 7: (7-1) % 3 == 0 → 32.
  LossScaler s(dyn(4, 3, 2));
  drive(s, {{true, 16, 1},
            {true, 8, 1},
            {false, 8, 1},
            {false, 8, 1},
            {false, 16, 2},
            {false, 16, 2},
            {false, 16, 2},
            {false, 32, 2}});
}

TEST(LossScaler, CleanStartDoublesEveryWindow) {
  // No overflow: last_overflow_iter = -1, so the doubling happens at iter 1, 3, 5 with window 2.
  LossScaler s(dyn(2, 2, 1));
  drive(s, {{false, 4, 1}, {false, 8, 1}, {false, 8, 1}, {false, 16, 1}});
}

TEST(LossScaler, ConsecutiveHysteresisRestoresOnEveryCleanStep) {
  // With consecutive_hysteresis a single clean step refills hysteresis, so
  // isolated overflows never halve the scale.
  LossScaler s(dyn(4, 1000, 2, /*consecutive=*/true));
  drive(
      s,
      {{true, 16, 1}, {false, 16, 2}, {true, 16, 1}, {false, 16, 2}, {true, 16, 1}, {true, 8, 1}});
  // Without it, hysteresis is only restored with a doubling.
  LossScaler t(dyn(4, 1000, 2, /*consecutive=*/false));
  drive(t, {{true, 16, 1}, {false, 16, 1}, {true, 8, 1}});
}

TEST(LossScaler, NeverBelowTheMinimumAndRaisesAtIt) {
  LossScaler s(dyn(2, 1000, 1, false, /*min_scale=*/2.0f));
  drive(s, {{true, 2, 1}});
  try {
    s.update(true);
    FAIL() << "expected an error at the minimum scale";
  } catch (const LossScaleAtMinimumError& e) {
    EXPECT_NE(std::string(e.what()).find("minimum"), std::string::npos);
  }
}

TEST(LossScaler, StaticScaleNeverChanges) {
  Fp16Config c;
  c.enabled = true;
  c.loss_scale = 128.0f;
  LossScaler s(c);
  EXPECT_FALSE(s.dynamic());
  for (bool o : {true, false, true, true, false}) {
    s.update(o);
    EXPECT_EQ(s.scale(), 128.0f);
  }
}

TEST(LossScaler, StateRoundTrips) {
  LossScaler a(dyn(8, 5, 3));
  for (bool o : {true, false, true, false, false}) a.update(o);
  LossScaler b(dyn(8, 5, 3));
  b.load_state(a.state());
  for (bool o : {false, false, true, false, false, false, false, false, true}) {
    a.update(o);
    b.update(o);
    EXPECT_EQ(a.scale(), b.scale());
    EXPECT_EQ(a.hysteresis_left(), b.hysteresis_left());
  }
}

}  // namespace
}  // namespace hybrid::engine
