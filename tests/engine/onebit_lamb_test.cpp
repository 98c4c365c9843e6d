// OneBitLamb through hybrid-train on 2 ranks: it trains through its warm-up and
// compressed stages and stops all-reducing gradients at the freeze; its bad
// parameters and the combinations it cannot run are refused by name. A
// checkpoint saved past the freeze resumes with the frozen coefficients.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/config/config.h"
#include "engine/engine.h"
#include "engine_test_util.h"
#include "tests/common/error_of.h"

namespace hybrid::test {
namespace {

nlohmann::json onebit_lamb_patch(int64_t freeze_step) {
  return {{"optimizer",
           {{"type", "OneBitLamb"},
            {"params",
             {{"lr", 1e-2},
              {"freeze_step", freeze_step},
              {"weight_decay", 0.01},
              {"coeff_beta", 0.5}}}}}};
}

double all_reduce_bytes(const TrainRun& r) {
  return r.result.at("comm_bytes_per_step").at("all_reduce").get<double>();
}

TEST(OneBitLamb, TrainsOnTwoRanksAndStopsReducingGradientsAtTheFreeze) {
  const TempDir dir;
  const std::string steps = "--quiet --steps 12";
  const auto adamw = run_hybrid_train(dir, "adamw", 2, {}, steps);
  ASSERT_EQ(adamw.exit_code, 0) << adamw.output;
  const auto compressed = run_hybrid_train(dir, "compressed", 2, onebit_lamb_patch(4), steps);
  ASSERT_EQ(compressed.exit_code, 0) << compressed.output;
  const auto l = losses(compressed);
  EXPECT_LT(l.back(), l.front() - 0.05) << compressed.output;
  // From step 5 on, 8 of the 12 steps send no gradient.
  EXPECT_NEAR(all_reduce_bytes(compressed), all_reduce_bytes(adamw) * 4.0 / 12.0,
              all_reduce_bytes(adamw) * 0.01);
  EXPECT_GT(compressed.result.at("comm_bytes_per_step").at("all_to_all").get<double>(), 0.0);
}

TEST(OneBitLamb, RefusesBadParametersNamingThem) {
  const auto refused = [](const nlohmann::json& params) {
    nlohmann::json p = onebit_lamb_patch(10);
    p.merge_patch({{"optimizer", {{"params", params}}}});
    return error_of([&] { (void)tiny_config(p, 2); });
  };
  const auto names = [&](const nlohmann::json& params, const std::string& key) {
    const std::string e = refused(params);
    EXPECT_NE(e.find("optimizer.params." + key), std::string::npos) << params << ": " << e;
  };
  names({{"coeff_beta", 1.0}}, "coeff_beta");
  names({{"coeff_beta", -0.1}}, "coeff_beta");
  names({{"factor_max", 0.0}}, "factor_max");
  names({{"factor_min", 0.0}}, "factor_min");
  names({{"factor_min", 5.0}}, "factor_min");  // above factor_max 4
  names({{"factor_threshold", -0.1}}, "factor_threshold");
  names({{"min_coeff", 20.0}}, "min_coeff");  // above max_coeff 10
  names({{"freeze_step", -1}}, "freeze_step");
  names({{"momentum", 0.9}}, "momentum");  // SGD's, not OneBitLamb's
  nlohmann::json stage1 = onebit_lamb_patch(10);
  stage1["zero_optimization"] = {{"stage", 1}};
  const std::string e = error_of([&] { (void)tiny_config(stage1, 2); });
  EXPECT_NE(e.find("OneBitLamb with zero_optimization.stage 1"), std::string::npos) << e;
}

// One rank (nothing compressed, so nothing dropped on load): 6 steps, a
// checkpoint past the freeze (step 3), 4 more steps in a fresh engine give
// the parameters of 10 steps in one run, bit for bit, through the per-tensor
// coefficients the checkpoint's meta keeps; without them the resume is an
// error naming the missing key.
TEST(OneBitLamb, ACheckpointPastTheFreezeResumesExactly) {
  const auto cfg = tiny_config(onebit_lamb_patch(3));
  const TempDir dir;
  auto whole = initialize(cfg, make_model(cfg), quiet());
  train_on_changing_batches(*whole, 10);
  auto first = initialize(cfg, make_model(cfg), quiet());
  train_on_changing_batches(*first, 6);
  first->save_checkpoint(dir.path().string(), "past_freeze");
  auto resumed = initialize(cfg, make_model(cfg), quiet());
  resumed->load_checkpoint(dir.path().string(), "past_freeze");
  train_on_changing_batches(*resumed, 4);
  EXPECT_EQ(resumed->gather_parameters(), whole->gather_parameters());

  const std::string meta = (dir.path() / "past_freeze" / "meta.json").string();
  nlohmann::json j = nlohmann::json::parse(std::ifstream(meta));
  ASSERT_TRUE(j.contains("optimizer_scalars")) << j.dump();
  const auto model = make_model(cfg);
  EXPECT_EQ(j["optimizer_scalars"]["coeff_freeze"].size(),
            engine::ModuleTree(*model).params().size());
  j.erase("optimizer_scalars");
  std::ofstream(meta) << j.dump();
  auto old = initialize(cfg, make_model(cfg), quiet());
  old->load_checkpoint(dir.path().string(), "past_freeze");
  const std::string e = error_of([&] { train_on_changing_batches(*old, 1); });
  EXPECT_NE(e.find("optimizer_scalars.coeff_freeze"), std::string::npos) << e;
}

}  // namespace
}  // namespace hybrid::test
