// ds_config.json parsing: DeepSpeed's batch triad, defaults and validation, our
// "hybrid" block, ignored keys, and load_config's file errors.
#include "engine/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/error_of.h"

namespace {

using hybrid::engine::Config;
using hybrid::engine::ConfigError;
using hybrid::engine::Device;
using hybrid::engine::load_config;
using hybrid::engine::OffloadDevice;
using hybrid::engine::parse_byte_size;
using hybrid::engine::parse_config;
using hybrid::kernels::DType;
using nlohmann::json;
using ::testing::HasSubstr;

// The message of the ConfigError that parsing j throws ("" if none is thrown).
std::string error_of(const json& j, int world_size = 1) {
  return hybrid::test::error_of<ConfigError>([&] { parse_config(j, world_size); });
}

json base() { return json{{"train_micro_batch_size_per_gpu", 2}}; }

json with(json j, const std::string& key, json value) {
  j[key] = std::move(value);
  return j;
}

// ---- batch triad -----------------------------------------------------------

struct TriadCase {
  json given;
  int world;
  int tb, mb, gas;  // expected resolution
};

TEST(ConfigBatch, ResolvesEachCombinationAsDeepSpeed) {
  const TriadCase cases[] = {
      {{{"train_batch_size", 32},
        {"train_micro_batch_size_per_gpu", 4},
        {"gradient_accumulation_steps", 2}},
       4,
       32,
       4,
       2},
      {{{"train_batch_size", 32}, {"train_micro_batch_size_per_gpu", 4}},
       2,
       32,
       4,
       4},  // gas = 32 // 4 // 2
      {{{"train_batch_size", 32}, {"gradient_accumulation_steps", 2}},
       2,
       32,
       8,
       2},  // mb = 32 // 2 // 2
      {{{"train_micro_batch_size_per_gpu", 4}, {"gradient_accumulation_steps", 2}}, 3, 24, 4, 2},
      {{{"train_batch_size", 32}}, 4, 32, 8, 1},  // gas 1, mb = 32 // 4
      {{{"train_micro_batch_size_per_gpu", 4}}, 2, 8, 4, 1},
      // "auto" counts as not given.
      {{{"train_batch_size", 16},
        {"train_micro_batch_size_per_gpu", 2},
        {"gradient_accumulation_steps", "auto"}},
       2,
       16,
       2,
       4},
      {{{"train_batch_size", "auto"},
        {"train_micro_batch_size_per_gpu", 3},
        {"gradient_accumulation_steps", 5}},
       2,
       30,
       3,
       5},
      // An integral float is an integer.
      {{{"train_batch_size", 64.0}, {"train_micro_batch_size_per_gpu", 8}}, 1, 64, 8, 8},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.given.dump() + " world " + std::to_string(c.world));
    const Config cfg = parse_config(c.given, c.world);
    EXPECT_EQ(cfg.train_batch_size, c.tb);
    EXPECT_EQ(cfg.train_micro_batch_size_per_gpu, c.mb);
    EXPECT_EQ(cfg.gradient_accumulation_steps, c.gas);
  }
}

TEST(ConfigBatch, EveryAcceptedTriadIsConsistentAndKeepsGivenValues) {
  // Property over a grid: whatever parse accepts satisfies tb = mb · gas · W and
  // keeps every value that was given; a full, consistent triad is always accepted.
  for (int world = 1; world <= 4; ++world)
    for (int tb = 0; tb <= 12; ++tb)
      for (int mb = 0; mb <= 6; ++mb)
        for (int gas = 0; gas <= 4; ++gas) {
          json j = json::object();
          if (tb) j["train_batch_size"] = tb;
          if (mb) j["train_micro_batch_size_per_gpu"] = mb;
          if (gas) j["gradient_accumulation_steps"] = gas;
          SCOPED_TRACE(j.dump() + " world " + std::to_string(world));
          try {
            const Config c = parse_config(j, world);
            EXPECT_EQ(c.train_batch_size,
                      c.train_micro_batch_size_per_gpu * c.gradient_accumulation_steps * world);
            if (tb) {
              EXPECT_EQ(c.train_batch_size, tb);
            }
            if (mb) {
              EXPECT_EQ(c.train_micro_batch_size_per_gpu, mb);
            }
            if (gas) {
              EXPECT_EQ(c.gradient_accumulation_steps, gas);
            }
          } catch (const ConfigError&) {
            EXPECT_FALSE(tb && mb && gas && tb == mb * gas * world);
            EXPECT_FALSE(mb && !tb);  // micro batch (with or without gas) always resolves
          }
        }
}

TEST(ConfigBatch, ErrorsNameTheKeysAndNumbers) {
  EXPECT_THAT(error_of(json::object()),
              HasSubstr("train_batch_size or train_micro_batch_size_per_gpu must be given"));
  EXPECT_THAT(error_of({{"gradient_accumulation_steps", 4}}),
              HasSubstr("train_batch_size or train_micro_batch_size_per_gpu must be given"));
  EXPECT_THAT(error_of({{"train_batch_size", "auto"}, {"train_micro_batch_size_per_gpu", "auto"}}),
              HasSubstr("must be given"));
  EXPECT_EQ(error_of({{"train_batch_size", 30},
                      {"train_micro_batch_size_per_gpu", 4},
                      {"gradient_accumulation_steps", 2}},
                     4),
            "config: train_batch_size 30 must equal train_micro_batch_size_per_gpu 4 * "
            "gradient_accumulation_steps 2 * world_size 4 = 32");
  // Derived by floor division, as DeepSpeed does, then caught by the assertion.
  const std::string derived =
      error_of({{"train_batch_size", 10}, {"train_micro_batch_size_per_gpu", 3}});
  EXPECT_THAT(derived, HasSubstr("train_batch_size 10 must equal"));
  EXPECT_THAT(derived, HasSubstr("= 9"));
  EXPECT_THAT(derived, HasSubstr("gradient_accumulation_steps derived"));
  EXPECT_THAT(error_of({{"train_batch_size", 2}, {"train_micro_batch_size_per_gpu", 4}}),
              HasSubstr("gradient_accumulation_steps resolves to 0"));
  EXPECT_THAT(error_of({{"train_batch_size", 3}}, 4),
              HasSubstr("train_micro_batch_size_per_gpu resolves to 0"));
  EXPECT_EQ(error_of({{"train_micro_batch_size_per_gpu", 0}}),
            "config: train_micro_batch_size_per_gpu must be a positive integer, got 0");
  EXPECT_EQ(error_of({{"train_batch_size", -8}, {"train_micro_batch_size_per_gpu", 2}}),
            "config: train_batch_size must be a positive integer, got -8");
  EXPECT_EQ(error_of({{"train_micro_batch_size_per_gpu", 2}, {"gradient_accumulation_steps", 1.5}}),
            "config: gradient_accumulation_steps must be a positive integer, got 1.5");
  EXPECT_EQ(error_of({{"train_batch_size", "32"}}),
            "config: train_batch_size must be a positive integer, got \"32\"");
  EXPECT_THAT(error_of(base(), 0), HasSubstr("world_size must be at least 1, got 0"));
  EXPECT_THAT(error_of(json::array()), HasSubstr("must be a JSON object"));
}

// ---- DeepSpeed blocks ------------------------------------------------------

TEST(ConfigDefaults, MatchDeepSpeed) {
  const Config c = parse_config(base());
  EXPECT_EQ(c.optimizer.type, "AdamW");
  EXPECT_FLOAT_EQ(c.optimizer.lr, 1e-3f);
  EXPECT_FLOAT_EQ(c.optimizer.beta1, 0.9f);
  EXPECT_FLOAT_EQ(c.optimizer.beta2, 0.999f);
  EXPECT_FLOAT_EQ(c.optimizer.eps, 1e-8f);
  EXPECT_TRUE(c.scheduler.type.empty());
  EXPECT_EQ(c.gradient_clipping, 0.0f);
  EXPECT_EQ(c.steps_per_print, 10);
  EXPECT_FALSE(c.wall_clock_breakdown);
  EXPECT_FALSE(c.fp16.enabled);
  EXPECT_EQ(c.fp16.loss_scale, 0.0f);
  EXPECT_EQ(c.fp16.initial_scale_power, 16);
  EXPECT_EQ(c.fp16.loss_scale_window, 1000);
  EXPECT_EQ(c.fp16.hysteresis, 2);
  EXPECT_FALSE(c.fp16.consecutive_hysteresis);
  EXPECT_EQ(c.fp16.min_loss_scale, 1.0f);
  EXPECT_FALSE(c.bf16);
  EXPECT_EQ(c.grad_accum_dtype, DType::f32);
  EXPECT_EQ(c.zero.stage, 0);
  EXPECT_EQ(c.zero.reduce_bucket_size, 500'000'000);
  EXPECT_EQ(c.zero.allgather_bucket_size, 500'000'000);
  EXPECT_FALSE(c.zero.overlap_comm);
  EXPECT_TRUE(c.zero.reduce_scatter);
  EXPECT_EQ(c.zero.stage3_prefetch_bucket_size, 50'000'000);
  EXPECT_EQ(c.zero.stage3_param_persistence_threshold, 100'000);
  EXPECT_EQ(c.zero.stage3_max_live_parameters, 1'000'000'000);
  EXPECT_EQ(c.zero.offload_optimizer.device, OffloadDevice::none);
  EXPECT_EQ(c.flops_profiler.profile_step, 1);
  EXPECT_EQ(c.flops_profiler.module_depth, -1);
  EXPECT_EQ(c.flops_profiler.top_modules, 1);
  EXPECT_TRUE(c.flops_profiler.detailed);
  EXPECT_TRUE(c.comms_logger.prof_all);
  EXPECT_TRUE(c.data.synthetic);
  EXPECT_EQ(c.device, Device::automatic);
  EXPECT_EQ(c.memory_budget, 0u);
  EXPECT_TRUE(c.ignored_keys.empty());
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.raw, base());
}

TEST(ConfigOptimizer, AdamWModeFollowsDeepSpeed) {
  auto opt = [](json o) { return parse_config(with(base(), "optimizer", std::move(o))).optimizer; };
  EXPECT_TRUE(opt({{"type", "Adam"}}).adam_w_mode);  // ADAM_W_MODE_DEFAULT = True
  EXPECT_FALSE(opt({{"type", "Adam"}, {"params", {{"adam_w_mode", false}}}}).adam_w_mode);
  EXPECT_TRUE(opt({{"type", "AdamW"}, {"params", {{"adam_w_mode", false}}}}).adam_w_mode);
  EXPECT_EQ(opt({{"type", "adamw"}}).type, "AdamW");  // DeepSpeed lower-cases known names
  EXPECT_EQ(opt({{"type", "ADAM"}}).type, "Adam");

  const auto o = opt({{"type", "AdamW"},
                      {"params",
                       {{"lr", 3e-4},
                        {"betas", {0.8, 0.95}},
                        {"eps", 1e-6},
                        {"weight_decay", 0.1},
                        {"bias_correction", false}}}});
  EXPECT_FLOAT_EQ(o.lr, 3e-4f);
  EXPECT_FLOAT_EQ(o.beta1, 0.8f);
  EXPECT_FLOAT_EQ(o.beta2, 0.95f);
  EXPECT_FLOAT_EQ(o.eps, 1e-6f);
  EXPECT_FLOAT_EQ(o.weight_decay, 0.1f);
  EXPECT_FALSE(o.bias_correction);
}

TEST(ConfigOptimizer, RejectsWhatWeDoNotImplement) {
  EXPECT_EQ(error_of(with(base(), "optimizer", {{"type", "Adagrad"}})),
            "config: optimizer.type must be one of Adam, AdamW, Lamb, SGD, OneBitAdam, "
            "ZeroOneAdam, OneBitLamb (the optimizers hybrid implements), got \"Adagrad\"");
  EXPECT_THAT(error_of(with(base(), "optimizer", {{"params", {{"lr", 1e-3}}}})),
              HasSubstr("optimizer.type must be given"));
  EXPECT_EQ(error_of(with(base(), "optimizer", {{"type", "Adam"}, {"params", {{"betas", {0.9}}}}})),
            "config: optimizer.params.betas must be a list of two numbers in [0, 1), got [0.9]");
  EXPECT_THAT(
      error_of(with(base(), "optimizer", {{"type", "Adam"}, {"params", {{"betas", {0.9, 1.0}}}}})),
      HasSubstr("optimizer.params.betas"));
  EXPECT_THAT(
      error_of(with(base(), "optimizer", {{"type", "Adam"}, {"params", {{"max_grad_norm", 1.0}}}})),
      HasSubstr("use the top-level gradient_clipping"));
  EXPECT_EQ(error_of(with(base(), "optimizer", {{"type", "Adam"}, {"params", {{"lr", -1}}}})),
            "config: optimizer.params.lr must be a number >= 0, got -1");
  EXPECT_EQ(error_of(with(base(), "optimizer", {{"type", "Adam"}, {"params", {{"eps", 0}}}})),
            "config: optimizer.params.eps must be a number > 0, got 0");
}

TEST(ConfigScheduler, ParamsAndDefaults) {
  auto sched = [](json s, json opt = nullptr) {
    json j = with(base(), "scheduler", std::move(s));
    if (!opt.is_null()) j["optimizer"] = std::move(opt);
    return parse_config(j).scheduler;
  };
  // WarmupLR without warmup_max_lr warms up to the optimizer's lr.
  auto s = sched({{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 50}}}},
                 {{"type", "AdamW"}, {"params", {{"lr", 6e-4}}}});
  EXPECT_EQ(s.type, "WarmupLR");
  EXPECT_TRUE(s.warmup_max_lr_from_optimizer);
  EXPECT_FLOAT_EQ(s.warmup_max_lr, 6e-4f);
  EXPECT_EQ(s.warmup_num_steps, 50);
  EXPECT_EQ(s.warmup_type, "log");
  // WarmupDecayLR keeps DeepSpeed's 0.001 default.
  s = sched({{"type", "WarmupDecayLR"},
             {"params",
              {{"total_num_steps", 1000}, {"warmup_type", "linear"}, {"warmup_min_lr", 1e-5}}}});
  EXPECT_FALSE(s.warmup_max_lr_from_optimizer);
  EXPECT_FLOAT_EQ(s.warmup_max_lr, 1e-3f);
  EXPECT_FLOAT_EQ(s.warmup_min_lr, 1e-5f);
  EXPECT_EQ(s.total_num_steps, 1000);
  EXPECT_EQ(s.warmup_type, "linear");
  s = sched({{"type", "WarmupCosineLR"},
             {"params", {{"total_num_steps", 200}, {"warmup_min_ratio", 0.1}}}});
  EXPECT_FLOAT_EQ(s.cos_min_ratio, 1e-4f);
  EXPECT_FLOAT_EQ(s.warmup_min_ratio, 0.1f);
  EXPECT_EQ(s.warmup_num_steps, 1000);
  // No type: DeepSpeed builds no scheduler.
  EXPECT_TRUE(sched(json::object()).type.empty());
}

TEST(ConfigScheduler, Errors) {
  auto err = [](json s) { return error_of(with(base(), "scheduler", std::move(s))); };
  EXPECT_EQ(err({{"type", "CyclicLR"}}),
            "config: scheduler.type must be one of \"WarmupLR\", \"WarmupDecayLR\", "
            "\"WarmupCosineLR\", \"OneCycle\" or \"LRRangeTest\", got \"CyclicLR\"");
  EXPECT_THAT(err({{"type", "WarmupDecayLR"}, {"params", json::object()}}),
              HasSubstr("scheduler.params.total_num_steps must be given for WarmupDecayLR"));
  EXPECT_THAT(err({{"type", "WarmupCosineLR"}}), HasSubstr("total_num_steps must be given"));
  EXPECT_EQ(err({{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 0}}}}),
            "config: scheduler.params.warmup_num_steps must be a positive integer, got 0");
  EXPECT_THAT(err({{"type", "WarmupLR"}, {"params", {{"warmup_type", "cosine"}}}}),
              HasSubstr("scheduler.params.warmup_type must be one of \"log\" or \"linear\""));
  EXPECT_THAT(err({{"type", "WarmupCosineLR"},
                   {"params", {{"total_num_steps", 10}, {"warmup_max_lr", 1}}}}),
              HasSubstr("scheduler.params.warmup_max_lr is not a parameter of WarmupCosineLR"));
  EXPECT_THAT(err({{"type", "WarmupLR"}, {"params", {{"cos_min_ratio", 0.1}}}}),
              HasSubstr("cos_min_ratio is not a parameter of WarmupLR"));
}

TEST(ConfigPrecision, Fp16Bf16AndGradAccumDtype) {
  const Config c = parse_config(with(base(), "fp16",
                                     {{"enabled", true},
                                      {"loss_scale", 128},
                                      {"initial_scale_power", 12},
                                      {"loss_scale_window", 500},
                                      {"hysteresis", 4},
                                      {"consecutive_hysteresis", true},
                                      {"min_loss_scale", 0.25}}));
  EXPECT_TRUE(c.fp16.enabled);
  EXPECT_EQ(c.fp16.loss_scale, 128.0f);
  EXPECT_EQ(c.fp16.initial_scale_power, 12);
  EXPECT_EQ(c.fp16.loss_scale_window, 500);
  EXPECT_EQ(c.fp16.hysteresis, 4);
  EXPECT_TRUE(c.fp16.consecutive_hysteresis);
  EXPECT_EQ(c.fp16.min_loss_scale, 0.25f);
  EXPECT_EQ(c.param_dtype(), DType::f16);
  EXPECT_EQ(c.grad_accum_dtype, DType::f16);  // the param dtype unless data_types says otherwise

  const Config b = parse_config(with(base(), "bf16", {{"enabled", true}}));
  EXPECT_TRUE(b.bf16);
  EXPECT_EQ(b.grad_accum_dtype, DType::bf16);
  EXPECT_FALSE(b.grad_accum_dtype_set);
  // The older spelling DeepSpeed still reads.
  EXPECT_TRUE(parse_config(with(base(), "bfloat16", {{"enabled", true}})).bf16);

  json j = with(base(), "bf16", {{"enabled", true}});
  j["data_types"] = {{"grad_accum_dtype", "fp32"}};
  const Config g = parse_config(j);
  EXPECT_EQ(g.grad_accum_dtype, DType::f32);
  EXPECT_TRUE(g.grad_accum_dtype_set);

  json both = with(base(), "fp16", {{"enabled", true}});
  both["bf16"] = {{"enabled", true}};
  EXPECT_THAT(error_of(both), HasSubstr("fp16.enabled and bf16.enabled cannot both be true"));
  EXPECT_EQ(error_of(with(base(), "data_types", {{"grad_accum_dtype", "int4"}})),
            "config: data_types.grad_accum_dtype must be one of \"fp32\", \"fp16\", \"bf16\", got "
            "\"int4\"");
  EXPECT_EQ(error_of(with(base(), "fp16", {{"enabled", "yes"}})),
            "config: fp16.enabled must be true or false, got \"yes\"");
  EXPECT_EQ(error_of(with(base(), "fp16", 1)), "config: fp16 must be an object, got 1");
  EXPECT_THAT(error_of(with(base(), "fp16", {{"loss_scale", -1}})),
              HasSubstr("fp16.loss_scale must be"));
  EXPECT_THAT(error_of(with(base(), "fp16", {{"hysteresis", 0}})),
              HasSubstr("fp16.hysteresis must be a positive integer, got 0"));
}

TEST(ConfigZero, StageBucketsOverlapOffload) {
  auto zero = [](json z) {
    return parse_config(with(base(), "zero_optimization", std::move(z))).zero;
  };
  EXPECT_EQ(error_of(with(base(), "zero_optimization", {{"stage", 5}})),
            "config: zero_optimization.stage must be 0..3, got 5");
  EXPECT_EQ(error_of(with(base(), "zero_optimization", {{"stage", -1}})),
            "config: zero_optimization.stage must be 0..3, got -1");
  EXPECT_EQ(error_of(with(base(), "zero_optimization", {{"stage", "2"}})),
            "config: zero_optimization.stage must be 0..3, got \"2\"");

  const auto z = zero({{"stage", 2},
                       {"reduce_bucket_size", 5e8},
                       {"allgather_bucket_size", 2e8},
                       {"reduce_scatter", false}});
  EXPECT_EQ(z.stage, 2);
  EXPECT_EQ(z.reduce_bucket_size, 500'000'000);
  EXPECT_EQ(z.allgather_bucket_size, 200'000'000);
  EXPECT_FALSE(z.reduce_scatter);
  EXPECT_EQ(error_of(with(base(), "zero_optimization", {{"reduce_bucket_size", 1.5}})),
            "config: zero_optimization.reduce_bucket_size must be a positive integer, got 1.5");
  EXPECT_EQ(error_of(with(base(), "zero_optimization", {{"allgather_bucket_size", 0}})),
            "config: zero_optimization.allgather_bucket_size must be a positive integer, got 0");

  // overlap_comm's default depends on the stage (true for stage 3 only).
  for (int stage = 0; stage <= 3; ++stage)
    EXPECT_EQ(zero({{"stage", stage}}).overlap_comm, stage == 3);
  EXPECT_FALSE(zero({{"stage", 3}, {"overlap_comm", false}}).overlap_comm);
  EXPECT_TRUE(zero({{"stage", 1}, {"overlap_comm", true}}).overlap_comm);

  const auto z3 = zero({{"stage", 3},
                        {"stage3_prefetch_bucket_size", 1e7},
                        {"param_persistence_threshold", 0},
                        {"stage3_max_live_parameters", 3e8},
                        {"offload_optimizer", {{"device", "cpu"}, {"pin_memory", true}}},
                        {"offload_param", {{"device", "nvme"}, {"nvme_path", "/local_nvme"}}}});
  EXPECT_EQ(z3.stage3_prefetch_bucket_size, 10'000'000);
  EXPECT_EQ(z3.stage3_param_persistence_threshold, 0);
  EXPECT_EQ(z3.stage3_max_live_parameters, 300'000'000);
  EXPECT_EQ(z3.offload_optimizer.device, OffloadDevice::cpu);
  EXPECT_TRUE(z3.offload_optimizer.pin_memory);
  EXPECT_EQ(z3.offload_param.device, OffloadDevice::nvme);
  EXPECT_EQ(z3.offload_param.nvme_path, "/local_nvme");
  EXPECT_THAT(
      error_of(with(base(), "zero_optimization", {{"offload_param", {{"device", "gpu"}}}})),
      HasSubstr("zero_optimization.offload_param.device must be one of \"none\", \"cpu\" or "
                "\"nvme\", got \"gpu\""));
  EXPECT_THAT(
      error_of(with(base(), "zero_optimization", {{"offload_optimizer", {{"device", "nvme"}}}})),
      HasSubstr("offload_optimizer.nvme_path must be given"));
  // Deprecated forms DeepSpeed still reads.
  EXPECT_EQ(parse_config(with(base(), "zero_optimization", true)).zero.stage, 1);
  EXPECT_EQ(parse_config(with(base(), "zero_optimization", false)).zero.stage, 0);
  EXPECT_EQ(zero({{"stage", 2}, {"cpu_offload", true}}).offload_optimizer.device,
            OffloadDevice::cpu);
}

TEST(ConfigProfilers, FlopsProfilerTurnsOnWallClockBreakdown) {
  json j = with(base(), "flops_profiler",
                {{"enabled", true},
                 {"profile_step", 3},
                 {"module_depth", 2},
                 {"top_modules", 5},
                 {"detailed", false},
                 {"output_file", "flops.txt"}});
  j["comms_logger"] = {{"enabled", true},
                       {"verbose", true},
                       {"prof_all", false},
                       {"prof_ops", {"all_reduce", "all_gather"}}};
  const Config c = parse_config(j);
  EXPECT_TRUE(c.flops_profiler.enabled);
  EXPECT_EQ(c.flops_profiler.profile_step, 3);
  EXPECT_EQ(c.flops_profiler.module_depth, 2);
  EXPECT_EQ(c.flops_profiler.top_modules, 5);
  EXPECT_FALSE(c.flops_profiler.detailed);
  EXPECT_EQ(c.flops_profiler.output_file, "flops.txt");
  EXPECT_TRUE(c.wall_clock_breakdown);  // DeepSpeed ORs it with flops_profiler.enabled
  EXPECT_TRUE(c.comms_logger.enabled);
  EXPECT_TRUE(c.comms_logger.verbose);
  EXPECT_FALSE(c.comms_logger.prof_all);
  EXPECT_EQ(c.comms_logger.prof_ops, (std::vector<std::string>{"all_reduce", "all_gather"}));
  EXPECT_THAT(error_of(with(base(), "comms_logger", {{"prof_ops", "all_reduce"}})),
              HasSubstr("comms_logger.prof_ops must be a list of strings"));
  EXPECT_THAT(
      error_of(with(base(), "flops_profiler", {{"module_depth", -2}})),
      HasSubstr("flops_profiler.module_depth must be -1 (all) or a non-negative integer, got -2"));
}

TEST(ConfigTopLevel, ScalarsAndAuto) {
  json j = base();
  j["gradient_clipping"] = 1.0;
  j["steps_per_print"] = 5;
  j["wall_clock_breakdown"] = true;
  Config c = parse_config(j);
  EXPECT_EQ(c.gradient_clipping, 1.0f);
  EXPECT_EQ(c.steps_per_print, 5);
  EXPECT_TRUE(c.wall_clock_breakdown);
  // "auto" anywhere means DeepSpeed's default.
  c = parse_config(with(with(base(), "gradient_clipping", "auto"), "steps_per_print", "auto"));
  EXPECT_EQ(c.gradient_clipping, 0.0f);
  EXPECT_EQ(c.steps_per_print, 10);
  EXPECT_EQ(error_of(with(base(), "gradient_clipping", -0.5)),
            "config: gradient_clipping must be a number >= 0 (0: off), got -0.5");
}

// ---- ignored keys ------------------------------------------------------------

TEST(ConfigIgnored, ListsUnknownAndUnimplementedKeysAsDottedPaths) {
  json j = base();
  j["activation_checkpointing"] = {{"partition_activations", true}, {"synchronise", true}};
  j["tensorboard"] = {{"enabled", true}};
  j["amp"] = {{"enabled", false}};
  j["zero_optimization"] = {{"stage", 1}, {"sub_group_size", 1e9}, {"round_robin_gradients", true}};
  j["fp16"] = {{"enabled", true}, {"auto_cast", false}};
  j["optimizer"] = {{"type", "Adam"}, {"params", {{"lr", 1e-3}, {"torch_adam", true}}}};
  j["hybrid"] = {{"seed", 1}, {"colour", "blue"}, {"model", {{"n_layer", 2}, {"dropout", 0.1}}}};
  const Config c = parse_config(j);
  EXPECT_EQ(c.ignored_keys,
            (std::vector<std::string>{
                "activation_checkpointing.synchronise", "amp", "fp16.auto_cast", "hybrid.colour",
                "hybrid.model.dropout", "optimizer.params.torch_adam", "tensorboard",
                "zero_optimization.round_robin_gradients", "zero_optimization.sub_group_size"}));
}

// ---- accepted keys without effect: warnings -------------------------------------

TEST(ConfigWarnings, ContiguousGradientsIsAcceptedWithAWarningNamingIt) {
  for (bool value : {true, false}) {
    const Config c = parse_config(
        with(base(), "zero_optimization", {{"stage", 2}, {"contiguous_gradients", value}}));
    ASSERT_EQ(c.warnings.size(), 1u);
    EXPECT_THAT(c.warnings[0], HasSubstr(std::string("zero_optimization.contiguous_gradients (") +
                                         (value ? "true" : "false") + ") has no effect"));
    EXPECT_TRUE(c.ignored_keys.empty());  // read (and type-checked), not unknown
  }
  EXPECT_EQ(error_of(with(base(), "zero_optimization", {{"contiguous_gradients", 1}})),
            "config: zero_optimization.contiguous_gradients must be true or false, got 1");
}

TEST(ConfigWarnings, ReduceScatterFalseWarnsOnlyWhereTheStageIgnoresIt) {
  auto warnings = [](int stage, bool reduce_scatter) {
    return parse_config(with(base(), "zero_optimization",
                             {{"stage", stage}, {"reduce_scatter", reduce_scatter}}))
        .warnings;
  };
  for (int stage : {1, 2}) {
    EXPECT_TRUE(warnings(stage, false).empty()) << stage;  // all-reduce instead (grad_reducer)
    EXPECT_TRUE(warnings(stage, true).empty()) << stage;
  }
  ASSERT_EQ(warnings(0, false).size(), 1u);
  EXPECT_THAT(warnings(0, false)[0],
              HasSubstr("zero_optimization.reduce_scatter (false) has no effect at stage 0"));
  ASSERT_EQ(warnings(3, false).size(), 1u);
  EXPECT_THAT(warnings(3, false)[0], HasSubstr("at stage 3: stage 3 always reduce-scatters"));
  EXPECT_TRUE(warnings(0, true).empty());  // true is what stages 0 and 3 do anyway
}

// ---- "hybrid" block ------------------------------------------------------------

TEST(ConfigHybrid, ModelDataDeviceBudgetSeed) {
  json j = base();
  j["hybrid"] = {{"model",
                  {{"type", "gpt2"},
                   {"n_layer", 2},
                   {"n_embd", 96},
                   {"n_head", 3},
                   {"vocab_size", 50257},
                   {"seq_len", 64}}},
                 {"data", {{"train", "data/train_*.bin"}, {"val", "data/val_*.bin"}}},
                 {"init_from", "gpt2_124M.bin"},
                 {"device", "cpu"},
                 {"memory_budget", "8GiB"},
                 {"seed", 42},
                 {"threads", 2},
                 {"profiler", {{"trace", true}, {"trace_steps", 3}, {"chrome_trace", "t.json"}}}};
  const Config c = parse_config(j);
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.model.n_embd, 96);
  EXPECT_EQ(c.model.n_head, 3);
  EXPECT_EQ(c.model.vocab_size, 50257);
  EXPECT_EQ(c.padded_vocab(), 50304);  // rounded up to a multiple of 128, as llm.c pads
  EXPECT_EQ(c.model.seq_len, 64);
  EXPECT_FALSE(c.data.synthetic);
  EXPECT_EQ(c.data.train, "data/train_*.bin");
  EXPECT_EQ(c.data.val, "data/val_*.bin");
  EXPECT_EQ(c.init_from, "gpt2_124M.bin");
  EXPECT_EQ(c.device, Device::cpu);
  EXPECT_EQ(c.memory_budget, 8ull << 30);
  EXPECT_EQ(c.seed, 42u);
  EXPECT_EQ(c.threads, 2);
  EXPECT_TRUE(c.profiler.trace);
  EXPECT_EQ(c.profiler.trace_steps, 3);
  EXPECT_EQ(c.profiler.chrome_trace, "t.json");

  const Config s = parse_config(with(base(), "hybrid", {{"data", "synthetic"}}));
  EXPECT_TRUE(s.data.synthetic);
  const Config s2 = parse_config(
      with(base(), "hybrid",
           {{"data",
             {{"synthetic",
               {{"tokens", 4096}, {"val_tokens", 0}, {"branching", 2}, {"noise", 0.1}}}}}}));
  EXPECT_TRUE(s2.data.synthetic);
  EXPECT_EQ(s2.data.synthetic_tokens, 4096);
  EXPECT_EQ(s2.data.synthetic_val_tokens, 0);
  EXPECT_EQ(s2.data.synthetic_branching, 2);
  EXPECT_FLOAT_EQ(s2.data.synthetic_noise, 0.1f);
}

TEST(ConfigHybrid, Errors) {
  auto err = [](json h) { return error_of(with(base(), "hybrid", std::move(h))); };
  EXPECT_EQ(err({{"model", {{"n_embd", 250}, {"n_head", 4}}}}),
            "config: hybrid.model.n_embd (250) must be divisible by hybrid.model.n_head (4)");
  EXPECT_EQ(err({{"model", {{"type", "bert"}}}}),
            "config: hybrid.model.type must be one of \"gpt2\" or \"llama\", got \"bert\"");
  EXPECT_EQ(
      err({{"model", {{"type", "llama"}, {"n_embd", 96}, {"n_head", 32}}}}),
      "config: hybrid.model.n_head 32: heads of n_embd 96 / n_head = 3 channels; rotary "
      "positions turn channel pairs, so the head size must be even (hybrid.model.type llama)");
  EXPECT_EQ(err({{"model", {{"n_layer", 0}}}}),
            "config: hybrid.model.n_layer must be a positive integer, got 0");
  EXPECT_THAT(err({{"model", {{"vocab_size", 1000}, {"padded_vocab_size", 900}}}}),
              HasSubstr("hybrid.model.padded_vocab_size must be 0"));
  EXPECT_THAT(err({{"data", "fineweb"}}),
              HasSubstr("hybrid.data must be \"synthetic\" or an object"));
  EXPECT_THAT(err({{"data", {{"val", "v_*.bin"}}}}), HasSubstr("hybrid.data.train must be given"));
  EXPECT_THAT(err({{"data", {{"train", "t_*.bin"}, {"synthetic", true}}}}), HasSubstr("not both"));
  EXPECT_EQ(err({{"device", "tpu"}}),
            "config: hybrid.device must be one of \"auto\", \"cpu\" or \"cuda\", got \"tpu\"");
  EXPECT_THAT(err({{"memory_budget", "8 gigs"}}),
              HasSubstr("config: hybrid.memory_budget must be a size such as \"8GiB\""));
  EXPECT_EQ(err({{"seed", -3}}), "config: hybrid.seed must be a non-negative integer, got -3");
  EXPECT_EQ(err({{"threads", "many"}}),
            "config: hybrid.threads must be a non-negative integer (0: automatic), got \"many\"");
  EXPECT_EQ(err({{"profiler", {{"trace", 1}}}}),
            "config: hybrid.profiler.trace must be true or false, got 1");
}

// hybrid_engine.inference_tp_size reshards a data-parallel run: it divides the
// world and the model's heads, and never meets training's own splits.
TEST(ConfigHybridEngine, InferenceTpSizeErrors) {
  auto err = [](json patch, int world) {
    json j = base();
    j.merge_patch(patch);
    return error_of(j, world);
  };
  const json tp2 = {{"hybrid_engine", {{"inference_tp_size", 2}}}};
  EXPECT_EQ(err(tp2, 2), "");
  EXPECT_EQ(err(tp2, 3),
            "config: hybrid_engine.inference_tp_size 2 does not divide the world of 3 rank(s)");
  json with_tp = tp2;
  with_tp["tensor_model_parallel_size"] = 2;
  EXPECT_THAT(
      err(with_tp, 4),
      HasSubstr("hybrid_engine.inference_tp_size 2 reshards a data-parallel run's weights"));
  const json tp3 = {{"hybrid_engine", {{"inference_tp_size", 3}}},
                    {"hybrid", {{"model", {{"n_layer", 2}, {"n_embd", 64}, {"n_head", 4}}}}}};
  EXPECT_THAT(
      err(tp3, 3),
      HasSubstr("config: hybrid_engine.inference_tp_size 3 does not divide hybrid.model.n_head"));
  EXPECT_THAT(err({{"hybrid", {{"rollout", {{"every", -1}}}}}}, 1),
              HasSubstr("hybrid.rollout.every"));
}

// Devices and offload targets are enums spelled in JSON as DeepSpeed spells them.
TEST(ConfigHybrid, DeviceChoicesRoundTripThroughTheirSpelling) {
  for (Device d : hybrid::engine::kDevices)
    EXPECT_EQ(hybrid::engine::parse_device(to_string(d)), d);
  for (OffloadDevice d : hybrid::engine::kOffloadDevices)
    EXPECT_EQ(hybrid::engine::parse_offload_device(to_string(d)), d);
  EXPECT_EQ(to_string(Device::automatic), "auto");
  EXPECT_EQ(to_string(OffloadDevice::nvme), "nvme");
  EXPECT_FALSE(hybrid::engine::parse_device("tpu"));
  EXPECT_FALSE(hybrid::engine::parse_offload_device("disk"));
  EXPECT_EQ(parse_config(with(base(), "hybrid", {{"device", "cuda"}})).device, Device::cuda);
}

TEST(ConfigByteSize, UnitsAndErrors) {
  EXPECT_EQ(parse_byte_size("8GiB", "k"), 8ull * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("512MiB", "k"), 512ull * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("1.5GB", "k"), 1'500'000'000ull);
  EXPECT_EQ(parse_byte_size("64 kib", "k"), 65'536ull);
  EXPECT_EQ(parse_byte_size("2TB", "k"), 2'000'000'000'000ull);
  EXPECT_EQ(parse_byte_size("100", "k"), 100ull);
  EXPECT_EQ(parse_byte_size("100B", "k"), 100ull);
  EXPECT_EQ(parse_byte_size(1073741824, "k"), 1073741824ull);
  EXPECT_EQ(parse_byte_size(2e9, "k"), 2'000'000'000ull);
  for (const json& bad :
       {json("8XB"), json("GiB"), json("-1GiB"), json(-5), json(1.5), json(true), json("")}) {
    SCOPED_TRACE(bad.dump());
    try {
      parse_byte_size(bad, "hybrid.memory_budget");
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), HasSubstr("config: hybrid.memory_budget must be a size"));
      EXPECT_THAT(e.what(), HasSubstr(bad.dump()));
    }
  }
}

// ---- load_config -----------------------------------------------------------------

class ConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hybrid_config_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string load_error(const std::string& path) {
    try {
      load_config(path);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFile, LoadsWithCommentsLikeDeepSpeedsHjson) {
  const auto p = write("ds.json", R"({
  // DeepSpeed reads configs with hjson, which allows comments
  "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
  "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8},
  "hybrid": {"memory_budget": "512MiB"}
})");
  const Config c = load_config(p, 2);
  EXPECT_EQ(c.train_batch_size, 16);
  EXPECT_EQ(c.zero.stage, 2);
  EXPECT_EQ(c.memory_budget, 512ull << 20);
  EXPECT_EQ(c.raw["zero_optimization"]["stage"], 2);
}

TEST_F(ConfigFile, ErrorsNameThePathAndPosition) {
  const std::string missing = (dir_ / "nope.json").string();
  EXPECT_THAT(load_error(missing), HasSubstr("config: cannot open " + missing));
  const auto bad =
      write("bad.json", "{\n  \"train_batch_size\": 8,\n  \"fp16\": {\"enabled\": tru}\n}\n");
  const std::string msg = load_error(bad);
  EXPECT_THAT(msg, HasSubstr("config: " + bad + ": invalid JSON"));
  EXPECT_THAT(msg, HasSubstr("line 3, column"));
  const auto dup =
      write("dup.json", R"({"train_batch_size": 8, "fp16": {"enabled": true, "enabled": false}})");
  EXPECT_EQ(load_error(dup), "config: " + dup + ": duplicate key fp16.enabled");
  // Semantic errors keep their key-naming message.
  const auto stage =
      write("stage.json", R"({"train_batch_size": 8, "zero_optimization": {"stage": 5}})");
  EXPECT_EQ(load_error(stage), "config: zero_optimization.stage must be 0..3, got 5");
}

}  // namespace
