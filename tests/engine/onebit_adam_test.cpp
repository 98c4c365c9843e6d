// OneBitAdam through hybrid-train on 2 ranks: it trains, its compressed steps
// send a small fraction of AdamW's bytes (the gradients are no longer
// all-reduced; the momentum crosses as signs), and the configurations it
// cannot run are refused by name with the reason.
#include <gtest/gtest.h>

#include <string>

#include "engine/config/config.h"
#include "engine_test_util.h"
#include "tests/common/error_of.h"

namespace hybrid::test {
namespace {

nlohmann::json onebit_patch(int64_t freeze_step) {
  return {{"optimizer",
           {{"type", "OneBitAdam"},
            {"params", {{"lr", 1e-3}, {"freeze_step", freeze_step}, {"weight_decay", 0.01}}}}}};
}

double all_reduce_bytes(const TrainRun& r) {
  return r.result.at("comm_bytes_per_step").at("all_reduce").get<double>();
}

TEST(OneBitAdam, TrainsOnTwoRanksAndItsCompressedStepsSendAFractionOfAdamWsBytes) {
  const TempDir dir;
  const std::string steps = "--quiet --steps 12";
  const auto adamw = run_hybrid_train(dir, "adamw", 2, {}, steps);
  ASSERT_EQ(adamw.exit_code, 0) << adamw.output;
  const auto warm = run_hybrid_train(dir, "warm", 2, onebit_patch(1000), steps);
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  const auto compressed = run_hybrid_train(dir, "compressed", 2, onebit_patch(4), steps);
  ASSERT_EQ(compressed.exit_code, 0) << compressed.output;
  for (const TrainRun* r : {&warm, &compressed}) {
    const auto l = losses(*r);
    EXPECT_LT(l.back(), l.front() - 0.05) << r->output;
  }
  // Warm-up only: the gradients' all-reduce of every step, as AdamW's.
  EXPECT_EQ(all_reduce_bytes(warm), all_reduce_bytes(adamw));
  // From step 5 on, 8 of the 12 steps send no gradient.
  EXPECT_NEAR(all_reduce_bytes(compressed), all_reduce_bytes(adamw) * 4.0 / 12.0,
              all_reduce_bytes(adamw) * 0.01);
  EXPECT_GT(compressed.result.at("comm_bytes_per_step").at("all_to_all").get<double>(), 0.0);
}

TEST(OneBitAdam, RefusesWhatItCannotRunNamingTheReason) {
  const auto refused = [](const nlohmann::json& patch) {
    nlohmann::json p = onebit_patch(10);
    p.merge_patch(patch);
    return error_of([&] { (void)tiny_config(p, 2); });
  };
  EXPECT_NE(refused({{"zero_optimization", {{"stage", 1}}}}).find("zero_optimization.stage 1"),
            std::string::npos);
  EXPECT_NE(refused({{"gradient_clipping", 1.0}}).find("local gradient"), std::string::npos);
  EXPECT_NE(refused({{"tensor_model_parallel_size", 2}}).find("tensor or pipeline"),
            std::string::npos);
  EXPECT_NE(refused({{"optimizer", {{"params", {{"freeze_step", -1}}}}}})
                .find("optimizer.params.freeze_step"),
            std::string::npos);
  const auto backend = refused({{"optimizer", {{"params", {{"comm_backend_name", "gloo"}}}}}});
  EXPECT_NE(backend.find("optimizer.params.comm_backend_name"), std::string::npos) << backend;
  EXPECT_NE(backend.find("mpi"), std::string::npos) << backend;
}

}  // namespace
}  // namespace hybrid::test
