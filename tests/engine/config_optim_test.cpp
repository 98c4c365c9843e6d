// The optimizer and schedule keys of issue 13 (Lamb, SGD, OneCycle,
// LRRangeTest), hybrid.data.seq_len and hybrid.checkpoint: DeepSpeed's defaults,
// and every bad value refused with the key named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/config/config.h"
#include "tests/common/error_of.h"

namespace {

using hybrid::engine::ConfigError;
using hybrid::engine::parse_config;
using nlohmann::json;
using ::testing::HasSubstr;

std::string error_of(const json& j) {
  return hybrid::test::error_of<ConfigError>([&] { parse_config(j); });
}

json with(const std::string& key, json value) {
  json j = {{"train_micro_batch_size_per_gpu", 2}};
  j[key] = std::move(value);
  return j;
}

json optimizer(const std::string& type, json params = json::object()) {
  return with("optimizer", {{"type", type}, {"params", std::move(params)}});
}

TEST(ConfigLamb, DeepSpeedDefaultsAndValues) {
  auto o = parse_config(optimizer("Lamb")).optimizer;
  EXPECT_EQ(o.type, "Lamb");
  EXPECT_FLOAT_EQ(o.max_coeff, 10.0f);  // FusedLamb's defaults
  EXPECT_FLOAT_EQ(o.min_coeff, 0.01f);
  EXPECT_TRUE(o.bias_correction);
  EXPECT_FALSE(o.eps_inside_sqrt);
  EXPECT_EQ(parse_config(optimizer("lamb")).optimizer.type, "Lamb");
  o = parse_config(optimizer("Lamb", {{"lr", 2e-3},
                                      {"betas", {0.8, 0.9}},
                                      {"weight_decay", 0.01},
                                      {"bias_correction", false},
                                      {"max_coeff", 0.3},
                                      {"min_coeff", 0.05},
                                      {"eps_inside_sqrt", true}}))
          .optimizer;
  EXPECT_FLOAT_EQ(o.max_coeff, 0.3f);
  EXPECT_FLOAT_EQ(o.min_coeff, 0.05f);
  EXPECT_FLOAT_EQ(o.beta1, 0.8f);
  EXPECT_FALSE(o.bias_correction);
  EXPECT_TRUE(o.eps_inside_sqrt);
  EXPECT_FALSE(o.adam_w_mode);
}

TEST(ConfigLamb, BadCoefficientsNameTheKey) {
  EXPECT_EQ(error_of(optimizer("Lamb", {{"min_coeff", 0.5}, {"max_coeff", 0.3}})),
            "config: optimizer.params.min_coeff (0.5) must not exceed optimizer.params.max_coeff "
            "(0.3)");
  EXPECT_EQ(error_of(optimizer("Lamb", {{"min_coeff", 20}})),
            "config: optimizer.params.min_coeff (20) must not exceed optimizer.params.max_coeff "
            "(10)");
  EXPECT_EQ(error_of(optimizer("Lamb", {{"min_coeff", -0.1}})),
            "config: optimizer.params.min_coeff must be a number >= 0, got -0.1");
  EXPECT_EQ(error_of(optimizer("Lamb", {{"max_coeff", 0}})),
            "config: optimizer.params.max_coeff must be a number > 0, got 0");
  EXPECT_EQ(error_of(optimizer("Lamb", {{"momentum", 0.9}})),
            "config: optimizer.params.momentum is not a parameter of Lamb, got 0.9");
  EXPECT_THAT(error_of(optimizer("Lamb", {{"amsgrad", true}})), HasSubstr("amsgrad"));
  EXPECT_EQ(error_of(optimizer("Adam", {{"max_coeff", 1}})),
            "config: optimizer.params.max_coeff is not a parameter of Adam, got 1");
}

TEST(ConfigSgd, TorchDefaultsAndValues) {
  auto o = parse_config(optimizer("SGD")).optimizer;
  EXPECT_EQ(o.type, "SGD");
  EXPECT_EQ(o.momentum, 0.0f);
  EXPECT_EQ(o.dampening, 0.0f);
  EXPECT_FALSE(o.nesterov);
  o = parse_config(optimizer("sgd", {{"lr", 0.1},
                                     {"momentum", 0.9},
                                     {"weight_decay", 1e-4},
                                     {"nesterov", true},
                                     {"foreach", true}}))
          .optimizer;
  EXPECT_FLOAT_EQ(o.lr, 0.1f);
  EXPECT_FLOAT_EQ(o.momentum, 0.9f);
  EXPECT_FLOAT_EQ(o.weight_decay, 1e-4f);
  EXPECT_TRUE(o.nesterov);
  const auto c = parse_config(optimizer("SGD", {{"foreach", true}}));
  EXPECT_EQ(c.ignored_keys, std::vector<std::string>{"optimizer.params.foreach"});
}

TEST(ConfigSgd, BadValuesNameTheKey) {
  EXPECT_EQ(error_of(optimizer("SGD", {{"momentum", -0.5}})),
            "config: optimizer.params.momentum must be a number >= 0, got -0.5");
  EXPECT_EQ(error_of(optimizer("SGD", {{"nesterov", true}})),
            "config: optimizer.params.nesterov needs optimizer.params.momentum > 0 and "
            "optimizer.params.dampening 0 (got momentum 0, dampening 0)");
  EXPECT_THAT(
      error_of(optimizer("SGD", {{"nesterov", true}, {"momentum", 0.9}, {"dampening", 0.1}})),
      HasSubstr("optimizer.params.nesterov needs"));
  EXPECT_EQ(error_of(optimizer("SGD", {{"dampening", 1.5}})),
            "config: optimizer.params.dampening must be a number in [0, 1], got 1.5");
  EXPECT_EQ(error_of(optimizer("SGD", {{"weight_decay", -1}})),
            "config: optimizer.params.weight_decay must be a number >= 0, got -1");
  EXPECT_EQ(error_of(optimizer("SGD", {{"betas", {0.9, 0.99}}})),
            "config: optimizer.params.betas is not a parameter of SGD, got [0.9,0.99]");
}

TEST(ConfigOneCycle, ParamsAndDefaults) {
  const auto s = parse_config(with("scheduler",
                                   {{"type", "OneCycle"},
                                    {"params", {{"cycle_min_lr", 1e-4}, {"cycle_max_lr", 1e-2}}}}))
                     .scheduler;
  EXPECT_EQ(s.type, "OneCycle");
  EXPECT_EQ(s.cycle_first_step_size, 2000);
  EXPECT_EQ(s.cycle_second_step_size, 0);  // = first
  EXPECT_TRUE(s.cycle_momentum);
  EXPECT_FLOAT_EQ(s.cycle_min_mom, 0.8f);
  EXPECT_FLOAT_EQ(s.cycle_max_mom, 0.9f);
  EXPECT_EQ(s.decay_step_size, 0);
  const auto t = parse_config(with("scheduler", {{"type", "OneCycle"},
                                                 {"params",
                                                  {{"cycle_min_lr", 0},
                                                   {"cycle_max_lr", 1},
                                                   {"cycle_first_step_size", 100},
                                                   {"cycle_second_step_size", 300},
                                                   {"decay_step_size", 50},
                                                   {"decay_lr_rate", 0.1},
                                                   {"cycle_momentum", false},
                                                   {"cycle_first_stair_count", 2}}}}))
                     .scheduler;
  EXPECT_EQ(t.cycle_second_step_size, 300);
  EXPECT_EQ(t.decay_step_size, 50);
  EXPECT_FALSE(t.cycle_momentum);
  EXPECT_EQ(t.cycle_first_stair_count, 2);
}

TEST(ConfigOneCycle, BadValuesNameTheKey) {
  auto err = [](json params) {
    json p = {{"cycle_min_lr", 1e-4}, {"cycle_max_lr", 1e-2}};
    p.merge_patch(params);
    return error_of(with("scheduler", {{"type", "OneCycle"}, {"params", p}}));
  };
  EXPECT_EQ(error_of(with("scheduler", {{"type", "OneCycle"}, {"params", {{"cycle_min_lr", 0}}}})),
            "config: scheduler.params.cycle_max_lr must be given for OneCycle (a number >= 0)");
  EXPECT_EQ(err({{"cycle_first_step_size", 0}}),
            "config: scheduler.params.cycle_first_step_size must be a positive integer, got 0");
  EXPECT_EQ(err({{"cycle_second_step_size", -5}}),
            "config: scheduler.params.cycle_second_step_size must be a positive integer, got -5");
  EXPECT_EQ(err({{"decay_step_size", -1}}),
            "config: scheduler.params.decay_step_size must be a non-negative integer (0: no "
            "decay), got -1");
  EXPECT_EQ(err({{"cycle_max_mom", 1.5}}),
            "config: scheduler.params.cycle_max_mom must be a number in [0, 1], got 1.5");
  EXPECT_EQ(err({{"decay_lr_rate", -0.1}}),
            "config: scheduler.params.decay_lr_rate must be a number >= 0, got -0.1");
  EXPECT_EQ(err({{"warmup_num_steps", 10}}),
            "config: scheduler.params.warmup_num_steps is not a parameter of OneCycle, got 10");
}

TEST(ConfigLrRangeTest, ParamsAndBadValues) {
  const auto s = parse_config(with("scheduler", {{"type", "LRRangeTest"}})).scheduler;
  EXPECT_FLOAT_EQ(s.lr_range_test_min_lr, 1e-3f);  // DeepSpeed's defaults
  EXPECT_EQ(s.lr_range_test_step_size, 2000);
  EXPECT_FLOAT_EQ(s.lr_range_test_step_rate, 1.0f);
  EXPECT_FALSE(s.lr_range_test_staircase);
  auto err = [](json params) {
    return error_of(with("scheduler", {{"type", "LRRangeTest"}, {"params", std::move(params)}}));
  };
  EXPECT_EQ(err({{"lr_range_test_step_size", 0}}),
            "config: scheduler.params.lr_range_test_step_size must be a positive integer, got 0");
  EXPECT_EQ(err({{"lr_range_test_min_lr", -1}}),
            "config: scheduler.params.lr_range_test_min_lr must be a number >= 0, got -1");
  EXPECT_EQ(err({{"cycle_min_lr", 1}}),
            "config: scheduler.params.cycle_min_lr is not a parameter of LRRangeTest, got 1");
}

TEST(ConfigSeqLen, DefaultsToTheBlockSizeAndCannotExceedIt) {
  auto hybrid = [](json h) { return with("hybrid", std::move(h)); };
  auto c = parse_config(hybrid({{"model", {{"seq_len", 64}}}}));
  EXPECT_EQ(c.seq_len(), 64);
  EXPECT_EQ(c.data.seq_len, 64);
  c = parse_config(
      hybrid({{"model", {{"seq_len", 64}}}, {"data", {{"synthetic", true}, {"seq_len", 16}}}}));
  EXPECT_EQ(c.seq_len(), 16);
  EXPECT_EQ(c.model.seq_len, 64) << "the block size is unchanged";
  c = parse_config(
      hybrid({{"model", {{"seq_len", 1024}}}, {"data", {{"train", "t_*.bin"}, {"seq_len", 256}}}}));
  EXPECT_EQ(c.seq_len(), 256);
  EXPECT_EQ(error_of(hybrid(
                {{"model", {{"seq_len", 64}}}, {"data", {{"synthetic", true}, {"seq_len", 65}}}})),
            "config: hybrid.data.seq_len (65) must not exceed the block size hybrid.model.seq_len "
            "(64)");
  EXPECT_EQ(error_of(hybrid({{"data", {{"synthetic", true}, {"seq_len", 0}}}})),
            "config: hybrid.data.seq_len must be a positive integer, got 0");
}

TEST(ConfigCheckpoint, KeysAndNegativeValues) {
  auto hybrid = [](json k) { return with("hybrid", {{"checkpoint", std::move(k)}}); };
  const auto c = parse_config(
      hybrid({{"dir", "ckpt"}, {"interval", 1000}, {"optimizer_interval", 100}, {"keep_last", 3}}));
  EXPECT_EQ(c.checkpoint.dir, "ckpt");
  EXPECT_EQ(c.checkpoint.interval, 1000);
  EXPECT_EQ(c.checkpoint.optimizer_interval, 100);
  EXPECT_EQ(c.checkpoint.keep_last, 3);
  EXPECT_EQ(parse_config(hybrid(json::object())).checkpoint.interval, 0);
  EXPECT_EQ(error_of(hybrid({{"interval", -5}})),
            "config: hybrid.checkpoint.interval must be a non-negative integer (0: none), got -5");
  EXPECT_EQ(error_of(hybrid({{"optimizer_interval", -1}})),
            "config: hybrid.checkpoint.optimizer_interval must be a non-negative integer (0: "
            "none), got -1");
  EXPECT_EQ(error_of(hybrid({{"keep_last", -2}})),
            "config: hybrid.checkpoint.keep_last must be a non-negative integer (0: keep all), got "
            "-2");
  EXPECT_EQ(error_of(hybrid({{"interval", 2.5}})),
            "config: hybrid.checkpoint.interval must be a non-negative integer (0: none), got 2.5");
}

}  // namespace
