// DeepSpeed's autotuning block: defaults, values, errors naming the key.
#include "autotune/autotuning_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autotune/tune_error.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The integer keys: DeepSpeed's default, and the value the full block below gives.
struct IntKey {
  const char* name;
  int AutotuningOptions::*field;
  int deepspeed_default, given;
};
const IntKey kIntKeys[] = {
    {"tuner_early_stopping", &AutotuningOptions::tuner_early_stopping, 5, 2},
    {"tuner_num_trials", &AutotuningOptions::tuner_num_trials, 50, 9},
    {"start_profile_step", &AutotuningOptions::start_profile_step, 3, 4},
    {"end_profile_step", &AutotuningOptions::end_profile_step, 5, 6},
    {"min_train_micro_batch_size_per_gpu", &AutotuningOptions::min_train_micro_batch_size_per_gpu,
     1, 2},
    {"max_train_micro_batch_size_per_gpu", &AutotuningOptions::max_train_micro_batch_size_per_gpu,
     1024, 64},
    {"num_tuning_micro_batch_sizes", &AutotuningOptions::num_tuning_micro_batch_sizes, 3, 4}};

TEST(AutotuningOptions, DeepSpeedDefaultsWithoutABlock) {
  const AutotuningOptions o = parse_autotuning(json::parse(R"({"train_batch_size": 8})"));
  EXPECT_FALSE(o.present);
  EXPECT_EQ(o.metric, "throughput");
  EXPECT_EQ(o.tuner_type, "gridsearch");
  for (const IntKey& k : kIntKeys) EXPECT_EQ(o.*k.field, k.deepspeed_default) << k.name;
}

TEST(AutotuningOptions, ReadsEveryTuningKeyAndListsLauncherKeys) {
  const AutotuningOptions o = parse_autotuning(json::parse(R"({"autotuning": {
    "enabled": true, "metric": "latency", "tuner_type": "model_based", "tuner_early_stopping": 2,
    "tuner_num_trials": 9, "start_profile_step": 4, "end_profile_step": 6,
    "min_train_micro_batch_size_per_gpu": 2, "max_train_micro_batch_size_per_gpu": 64,
    "num_tuning_micro_batch_sizes": 4, "max_train_batch_size": 512, "results_dir": "x", "fast": "auto"}})"));
  EXPECT_TRUE(o.present);
  EXPECT_EQ(o.metric, "latency");
  EXPECT_EQ(strategy_from_tuner_type(o.tuner_type), "model");
  EXPECT_EQ(strategy_from_tuner_type("gridsearch"), "grid");
  for (const IntKey& k : kIntKeys) EXPECT_EQ(o.*k.field, k.given) << k.name;
  EXPECT_EQ(o.max_train_batch_size, 512);
  // "auto" counts as not given, as in the engine's config.
  EXPECT_EQ(o.ignored_keys,
            (std::vector<std::string>{"autotuning.enabled", "autotuning.results_dir"}));
}

TEST(AutotuningOptions, ErrorsNameTheKey) {
  auto error = [](const char* text) {
    try {
      parse_autotuning(json::parse(text));
    } catch (const TuneError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(
      error(R"({"autotuning": {"metric": "speed"}})"),
      HasSubstr(
          "config: autotuning.metric must be one of throughput, latency, flops, got \"speed\""));
  EXPECT_THAT(error(R"({"autotuning": {"tuner_type": "bayes"}})"),
              HasSubstr("autotuning.tuner_type must be one of"));
  EXPECT_THAT(error(R"({"autotuning": {"tuner_num_trials": 0}})"),
              HasSubstr("autotuning.tuner_num_trials must be a positive integer, got 0"));
  EXPECT_THAT(
      error(R"({"autotuning": {"start_profile_step": 6, "end_profile_step": 5}})"),
      HasSubstr("autotuning.end_profile_step (5) must be >= autotuning.start_profile_step (6)"));
  EXPECT_THAT(
      error(
          R"({"autotuning": {"min_train_micro_batch_size_per_gpu": 8, "max_train_micro_batch_size_per_gpu": 4}})"),
      HasSubstr("max_train_micro_batch_size_per_gpu (4) must be >="));
  EXPECT_THAT(error(R"({"autotuning": [1]})"), HasSubstr("config: autotuning must be an object"));
}

}  // namespace
}  // namespace hybrid::autotune
