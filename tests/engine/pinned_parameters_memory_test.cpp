// hybrid_engine.pin_parameters under ZeRO-3 holds every gathered module's
// parameters through a generate call: the memory model's prediction of what
// that adds to the params category (engine::predict_pinned_parameters) equals
// the tracking allocator's params peak during a pinned call over what the
// engine held before it, exactly; unpinned, the call stays below it (a module
// at a time) and the prediction is 0, as it is off ZeRO-3.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::MemCategory;

nlohmann::json zero3_with_pin(bool pin) {
  // At most 1000 elements live when gathering a module at a time: no prefetch
  // past the module, so an unpinned call never holds them all.
  return {{"zero_optimization",
           {{"stage", 3},
            {"stage3_param_persistence_threshold", 100},
            {"stage3_max_live_parameters", 1000}}},
          {"hybrid_engine", {{"enabled", true}, {"pin_parameters", pin}}}};
}

// The params category's growth during a greedy call of 4 prompts, after a step.
uint64_t params_growth_of_a_call(Engine& e) {
  test::train_on_changing_batches(e, 1);
  const uint64_t before = e.allocator().stats().current[size_t(MemCategory::params)];
  e.allocator().reset_peaks();
  engine::GenerationParams p;
  p.max_new_tokens = 5;
  e.generate({{1, 2, 3}, {7}, {4, 5, 6, 7, 8}, {9, 9}}, p);
  const auto s = e.allocator().stats();
  EXPECT_EQ(s.current[size_t(MemCategory::params)], before) << "unpinned after the call";
  return s.peak[size_t(MemCategory::params)] - before;
}

TEST(PinnedParametersMemory, TheMemoryModelPredictsThePinnedParametersExactly) {
  const auto pinned_cfg = test::tiny_config(zero3_with_pin(true));
  const uint64_t predicted = engine::predict_pinned_parameters(pinned_cfg);
  auto pinned = initialize(pinned_cfg, make_model(pinned_cfg), test::quiet());
  // Less than all parameters in fp32: the units under the persistence threshold
  // of 100 elements (the layer norms) stay resident and are not counted.
  EXPECT_GT(predicted, 0u);
  EXPECT_LT(predicted, uint64_t(pinned->param_count()) * 4);
  EXPECT_EQ(params_growth_of_a_call(*pinned), predicted);

  const auto loose_cfg = test::tiny_config(zero3_with_pin(false));
  EXPECT_EQ(engine::predict_pinned_parameters(loose_cfg), 0u);
  auto loose = initialize(loose_cfg, make_model(loose_cfg), test::quiet());
  EXPECT_LT(params_growth_of_a_call(*loose), predicted) << "a module at a time";

  nlohmann::json stage2 = zero3_with_pin(true);
  stage2["zero_optimization"]["stage"] = 2;
  EXPECT_EQ(engine::predict_pinned_parameters(test::tiny_config(stage2)), 0u);
}

}  // namespace
}  // namespace hybrid
