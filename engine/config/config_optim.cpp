// The "optimizer" and "scheduler" blocks of ds_config.json, with DeepSpeed's
// semantics: Adam/AdamW (FusedAdam), Lamb (FusedLamb), SGD (torch.optim.SGD,
// which DeepSpeed builds for any torch optimizer name), and the schedules of
// deepspeed/runtime/lr_schedules.py.
//
// A parameter that belongs to another optimizer or schedule (betas for SGD,
// warmup_max_lr for OneCycle) is an error, as the keyword argument is in
// DeepSpeed; other unknown keys are reported as ignored.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "base/json_read.h"
#include "engine/config/config.h"
#include "engine/config/config_reader.h"
#include "engine/config/optimizer_params.h"

namespace hybrid::engine {

// DeepSpeed's keyword arguments.
const std::map<std::string, std::set<std::string>>& optimizer_param_table() {
  static const std::set<std::string> adam = {"lr",           "betas",           "eps",
                                             "weight_decay", "bias_correction", "adam_w_mode"};
  static const std::map<std::string, std::set<std::string>> m = {
      {"Adam", adam},
      {"AdamW", adam},
      {"Lamb",
       {"lr", "betas", "eps", "weight_decay", "bias_correction", "max_coeff", "min_coeff",
        "eps_inside_sqrt"}},
      {"SGD", {"lr", "momentum", "dampening", "weight_decay", "nesterov"}},
      {"OneBitAdam",
       {"lr", "betas", "eps", "weight_decay", "bias_correction", "eps_inside_sqrt", "freeze_step",
        "cuda_aware", "comm_backend_name"}},
      {"ZeroOneAdam",
       {"lr", "betas", "eps", "weight_decay", "bias_correction", "eps_inside_sqrt",
        "var_freeze_step", "var_update_scaler", "local_step_scaler", "local_step_clipper",
        "cuda_aware", "comm_backend_name"}},
      {"OneBitLamb",
       {"lr", "betas", "eps", "weight_decay", "bias_correction", "eps_inside_sqrt", "freeze_step",
        "cuda_aware", "comm_backend_name", "max_coeff", "min_coeff", "coeff_beta", "factor_max",
        "factor_min", "factor_threshold"}},
  };
  return m;
}

}  // namespace hybrid::engine

namespace hybrid::engine::config_detail {

using nlohmann::json;

namespace {

constexpr double kMaxDouble = std::numeric_limits<double>::max();

const std::map<std::string, std::set<std::string>>& scheduler_params() {
  static const std::set<std::string> warmup = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps",
                                               "warmup_type"};
  static const std::set<std::string> decay = [] {
    auto s = warmup;
    s.insert("total_num_steps");
    return s;
  }();
  static const std::map<std::string, std::set<std::string>> m = {
      {"WarmupLR", warmup},
      {"WarmupDecayLR", decay},
      {"WarmupCosineLR",
       {"total_num_steps", "warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type"}},
      {"OneCycle",
       {"cycle_min_lr", "cycle_max_lr", "decay_lr_rate", "cycle_first_step_size",
        "cycle_second_step_size", "cycle_first_stair_count", "cycle_second_stair_count",
        "decay_step_size", "cycle_momentum", "cycle_min_mom", "cycle_max_mom", "decay_mom_rate"}},
      {"LRRangeTest",
       {"lr_range_test_min_lr", "lr_range_test_step_size", "lr_range_test_step_rate",
        "lr_range_test_staircase"}},
  };
  return m;
}

// A parameter of another entry of `table` given to `type` is an error.
void refuse_foreign_params(const json& params, const std::string& path, const std::string& type,
                           const std::map<std::string, std::set<std::string>>& table) {
  const auto& mine = table.at(type);
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (mine.contains(it.key()) || is_unset(*it)) continue;
    for (const auto& [other, keys] : table)
      if (keys.contains(it.key()))
        throw ConfigError(fmt::format("config: {}.{} is not a parameter of {}, got {}", path,
                                      it.key(), type, base::describe_json(*it)));
  }
}

std::string optimizer_name(const json& type) {
  const char* what =
      "one of Adam, AdamW, Lamb, SGD, OneBitAdam, ZeroOneAdam, OneBitLamb (the optimizers "
      "hybrid implements)";
  if (!type.is_string()) fail("optimizer.type", what, type);
  std::string lower = type.get<std::string>();
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  // DeepSpeed lower-cases the names it knows (torch's SGD we accept in any case too).
  for (const auto& name :
       {"Adam", "AdamW", "Lamb", "SGD", "OneBitAdam", "ZeroOneAdam", "OneBitLamb"}) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    if (lower == n) return name;
  }
  fail("optimizer.type", what, type);
}

void parse_betas(ObjectReader& p, OptimizerConfig& o) {
  const json* b = p.get("betas");
  if (!b) return;
  const char* what = "a list of two numbers in [0, 1)";
  if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number() || !(*b)[1].is_number())
    fail("optimizer.params.betas", what, *b);
  const double b1 = (*b)[0].get<double>(), b2 = (*b)[1].get<double>();
  if (!(b1 >= 0.0 && b1 < 1.0 && b2 >= 0.0 && b2 < 1.0)) fail("optimizer.params.betas", what, *b);
  o.beta1 = float(b1), o.beta2 = float(b2);
}

void parse_lamb(ObjectReader& p, OptimizerConfig& o) {
  if (auto v = p.number("max_coeff", 0.0, kMaxDouble, true)) o.max_coeff = float(*v);
  if (auto v = p.number("min_coeff", 0.0)) o.min_coeff = float(*v);
  if (auto v = p.boolean("eps_inside_sqrt")) o.eps_inside_sqrt = *v;
  if (o.min_coeff > o.max_coeff)
    throw ConfigError(
        fmt::format("config: optimizer.params.min_coeff ({:g}) must not exceed "
                    "optimizer.params.max_coeff ({:g})",
                    o.min_coeff, o.max_coeff));
}

// The 1-bit optimizers' shared arguments (DeepSpeed's OnebitAdam: its
// eps_inside_sqrt and bias_correction are read and unused there, as here).
void parse_onebit(ObjectReader& p, OptimizerConfig& o) {
  if (auto v = p.integer("freeze_step", 0, INT64_MAX, "a non-negative integer")) o.freeze_step = *v;
  if (auto v = p.boolean("cuda_aware")) o.cuda_aware = *v;
  if (auto v = p.choice("comm_backend_name", {"nccl", "mpi"})) o.comm_backend_name = *v;
  p.accept("eps_inside_sqrt");
}

// DeepSpeed's ZeroOneAdam schedule (a scaler or clipper of 0 would never
// double an interval, or take a step modulo 0 there).
void parse_zero_one_adam(ObjectReader& p, OptimizerConfig& o) {
  if (auto v = p.integer("var_freeze_step", 0, INT64_MAX, "a non-negative integer"))
    o.var_freeze_step = *v;
  if (auto v = p.integer("var_update_scaler", 1)) o.var_update_scaler = *v;
  if (auto v = p.integer("local_step_scaler", 1)) o.local_step_scaler = *v;
  if (auto v = p.integer("local_step_clipper", 1)) o.local_step_clipper = *v;
}

// DeepSpeed's OnebitLamb: the frozen coefficients' average and the bounds of
// the factor that scales them while compressing.
void parse_onebit_lamb(ObjectReader& p, OptimizerConfig& o) {
  if (auto v = p.number("coeff_beta", 0.0, std::nextafter(1.0, 0.0), false, "a number in [0, 1)"))
    o.coeff_beta = float(*v);
  if (auto v = p.number("factor_max", 0.0, kMaxDouble, true)) o.factor_max = float(*v);
  if (auto v = p.number("factor_min", 0.0, kMaxDouble, true)) o.factor_min = float(*v);
  if (auto v = p.number("factor_threshold", 0.0)) o.factor_threshold = float(*v);
  if (o.factor_min > o.factor_max)
    throw ConfigError(
        fmt::format("config: optimizer.params.factor_min ({:g}) must not exceed "
                    "optimizer.params.factor_max ({:g})",
                    o.factor_min, o.factor_max));
}

void parse_sgd(ObjectReader& p, OptimizerConfig& o) {
  if (auto v = p.number("momentum", 0.0)) o.momentum = float(*v);
  if (auto v = p.number("dampening", 0.0, 1.0)) o.dampening = float(*v);
  if (auto v = p.boolean("nesterov")) o.nesterov = *v;
  // torch.optim.SGD: "Nesterov momentum requires a momentum and zero dampening".
  if (o.nesterov && (o.momentum <= 0.0f || o.dampening != 0.0f))
    throw ConfigError(
        fmt::format("config: optimizer.params.nesterov needs optimizer.params.momentum > 0 and "
                    "optimizer.params.dampening 0 (got momentum {:g}, dampening {:g})",
                    o.momentum, o.dampening));
}

}  // namespace

void parse_optimizer(const json& block, Config& c) {
  ObjectReader r(block, "optimizer", c.ignored_keys);
  const json* type = r.get("type");
  if (!type)
    throw ConfigError(
        "config: optimizer.type must be given (\"Adam\", \"AdamW\", \"Lamb\", \"SGD\", "
        "\"OneBitAdam\", \"ZeroOneAdam\" or \"OneBitLamb\")");
  OptimizerConfig& o = c.optimizer;
  o.type = optimizer_name(*type);
  bool adam_w_mode = true;  // DeepSpeed's ADAM_W_MODE_DEFAULT
  if (const json* params = r.object("params")) {
    refuse_foreign_params(*params, "optimizer.params", o.type, optimizer_param_table());
    ObjectReader p(*params, "optimizer.params", c.ignored_keys);
    if (auto v = p.number("lr", 0.0)) o.lr = float(*v);
    if (auto v = p.number("weight_decay", 0.0)) o.weight_decay = float(*v);
    if (p.get("max_grad_norm"))  // DeepSpeed raises here too
      throw ConfigError(
          "config: optimizer.params.max_grad_norm is not supported; use the top-level "
          "gradient_clipping");
    if (o.type == "SGD") {
      parse_sgd(p, o);
    } else {
      parse_betas(p, o);
      if (auto v = p.number("eps", 0.0, kMaxDouble, true)) o.eps = float(*v);
      if (auto v = p.boolean("bias_correction")) o.bias_correction = *v;
      if (auto v = p.boolean("amsgrad"); v && *v)
        throw ConfigError(
            "config: optimizer.params.amsgrad must be false (AMSGrad is not supported), "
            "got true");
      if (o.type == "Lamb" || o.type == "OneBitLamb") parse_lamb(p, o);
      if (o.type == "OneBitLamb") parse_onebit_lamb(p, o);
      if (o.onebit()) parse_onebit(p, o);
      if (o.type == "ZeroOneAdam") parse_zero_one_adam(p, o);
      if (auto v = p.boolean("adam_w_mode")) adam_w_mode = *v;
    }
    p.finish();
  }
  // DeepSpeed: "AdamW" always decouples weight decay; "Adam" does unless adam_w_mode is false.
  o.adam_w_mode = o.type == "AdamW" || (o.type == "Adam" && adam_w_mode);
  r.finish();
}

namespace {

void parse_warmup_params(ObjectReader& p, SchedulerConfig& s, const Config& c) {
  const bool cosine = s.type == "WarmupCosineLR";
  const bool decay = s.type == "WarmupDecayLR";
  if (auto v = p.integer("warmup_num_steps", 1)) s.warmup_num_steps = *v;
  if (auto v = p.choice("warmup_type", {"log", "linear"})) s.warmup_type = *v;
  if (cosine) {
    if (auto v = p.number("warmup_min_ratio", 0.0)) s.warmup_min_ratio = float(*v);
    if (auto v = p.number("cos_min_ratio", 0.0)) s.cos_min_ratio = float(*v);
  } else {
    if (auto v = p.number("warmup_min_lr", 0.0)) s.warmup_min_lr = float(*v);
    if (auto v = p.number("warmup_max_lr", 0.0)) {
      s.warmup_max_lr = float(*v);
    } else if (!decay) {
      // DeepSpeed's WarmupLR defaults warmup_max_lr to the optimizer's lr; WarmupDecayLR to 0.001.
      s.warmup_max_lr = c.optimizer.lr;
      s.warmup_max_lr_from_optimizer = true;
    }
  }
  if (cosine || decay) {
    const auto total = p.integer("total_num_steps", 1);
    if (!total)
      throw ConfigError(
          fmt::format("config: scheduler.params.total_num_steps must be given for {} "
                      "(a positive integer)",
                      s.type));
    s.total_num_steps = *total;
  }
}

void parse_one_cycle(ObjectReader& p, SchedulerConfig& s) {
  for (const char* key : {"cycle_min_lr", "cycle_max_lr"})
    if (!p.get(key))  // required positional arguments of DeepSpeed's OneCycle
      throw ConfigError(fmt::format(
          "config: scheduler.params.{} must be given for OneCycle (a number >= 0)", key));
  s.cycle_min_lr = float(*p.number("cycle_min_lr", 0.0));
  s.cycle_max_lr = float(*p.number("cycle_max_lr", 0.0));
  if (auto v = p.number("decay_lr_rate", 0.0)) s.decay_lr_rate = float(*v);
  if (auto v = p.integer("cycle_first_step_size", 1)) s.cycle_first_step_size = *v;
  if (auto v = p.integer("cycle_second_step_size", 1)) s.cycle_second_step_size = *v;
  if (auto v = p.integer("cycle_first_stair_count", 0)) s.cycle_first_stair_count = *v;
  if (auto v = p.integer("cycle_second_stair_count", 0)) s.cycle_second_stair_count = *v;
  if (auto v = p.integer("decay_step_size", 0, INT64_MAX, "a non-negative integer (0: no decay)"))
    s.decay_step_size = *v;
  if (auto v = p.boolean("cycle_momentum")) s.cycle_momentum = *v;
  if (auto v = p.number("cycle_min_mom", 0.0, 1.0)) s.cycle_min_mom = float(*v);
  if (auto v = p.number("cycle_max_mom", 0.0, 1.0)) s.cycle_max_mom = float(*v);
  if (auto v = p.number("decay_mom_rate", 0.0)) s.decay_mom_rate = float(*v);
}

void parse_lr_range_test(ObjectReader& p, SchedulerConfig& s) {
  if (auto v = p.number("lr_range_test_min_lr", 0.0)) s.lr_range_test_min_lr = float(*v);
  if (auto v = p.integer("lr_range_test_step_size", 1)) s.lr_range_test_step_size = *v;
  if (auto v = p.number("lr_range_test_step_rate", 0.0)) s.lr_range_test_step_rate = float(*v);
  if (auto v = p.boolean("lr_range_test_staircase")) s.lr_range_test_staircase = *v;
}

}  // namespace

void parse_scheduler(const json& block, Config& c) {
  ObjectReader r(block, "scheduler", c.ignored_keys);
  const auto type =
      r.choice("type", {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"});
  if (!type) {  // DeepSpeed builds no scheduler without a type
    r.finish();
    return;
  }
  SchedulerConfig& s = c.scheduler;
  s.type = *type;
  const json* params = r.object("params");
  const json empty = json::object();
  if (params) refuse_foreign_params(*params, "scheduler.params", s.type, scheduler_params());
  ObjectReader p(params ? *params : empty, "scheduler.params", c.ignored_keys);
  if (s.type == "OneCycle") {
    parse_one_cycle(p, s);
    // DeepSpeed's OneCycle stores the stair counts and never reads them.
    for (const auto& [key, v] : {std::pair{"cycle_first_stair_count", s.cycle_first_stair_count},
                                 std::pair{"cycle_second_stair_count", s.cycle_second_stair_count}})
      if (v != 0)
        c.warnings.push_back(fmt::format(
            "scheduler.params.{} ({}) has no effect: DeepSpeed's OneCycle never reads it", key, v));
  } else if (s.type == "LRRangeTest") {
    parse_lr_range_test(p, s);
  } else {
    parse_warmup_params(p, s, c);
  }
  p.finish();
  r.finish();
}

// What the 1-bit optimizers cannot be combined with, each refused with its reason.
void check_onebit(const Config& c) {
  if (!c.optimizer.onebit()) return;
  const auto refuse = [&c](const std::string& what, const std::string& why) {
    return ConfigError(
        fmt::format("config: optimizer.type {} with {}: {}", c.optimizer.type, what, why));
  };
  if (c.zero.stage > 0)
    throw refuse(fmt::format("zero_optimization.stage {}", c.zero.stage),
                 "each rank's momentum takes its whole local gradient and the whole averaged "
                 "momentum, so a partition saves no memory, and a partitioned update would add "
                 "ZeRO's all-gather of the parameters, 16x the compressed exchange in fp32 "
                 "(docs/design.md, 1-bit Adam); DeepSpeed refuses ZeRO with them too");
  if (c.gradient_clipping > 0.0f)
    throw refuse(fmt::format("gradient_clipping {:g}", c.gradient_clipping),
                 "once compressing, each rank holds only its local gradient, whose norm is not "
                 "the batch's; set gradient_clipping to 0");
  if (c.parallel.tensor > 1 || c.parallel.pipeline_stages > 1)
    throw refuse("tensor or pipeline parallelism",
                 "the compressed momentum exchange runs over plain data parallelism only so far");
}

}  // namespace hybrid::engine::config_detail
