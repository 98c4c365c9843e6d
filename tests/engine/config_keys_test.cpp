// No silent keys: every key docs/config.md documents (the first column of each
// table whose header starts with "| key |") has a check below, and the check
// passes: the config with the key parses differently from the config without it,
// or the key is documented under "Keys accepted with a warning" and giving it
// produces a warning naming it. A documented key without a line in kKeyChecks
// fails, and so does a line for a key the page no longer documents.
//
// HOW TO ADD A KEY: document it in a "| key | ... |" table of docs/config.md, then
// add one line to kKeyChecks:
//   {"<key as the page writes it>", R"(<JSON merged over {"train_micro_batch_size_per_gpu": 1}
//                                      that gives the key a non-default value>)", <probe>},
// with <probe> one of
//   FIELD(member)  the parsed Config's `member` (any expression on `c.`) differs
//                  with and without the key (or, without it, parsing fails naming
//                  the key: a required key). Pick a value that is not the default.
//   WARNS          the key is accepted without effect: giving it adds a warning
//                  naming it (Config::warnings); document it under "Keys accepted
//                  with a warning".
//   ONLY_DEFAULT   the only accepted value is the default; any other is refused
//                  naming the key (the patch gives such a value).
// "Without the key" is the same JSON with the key's path removed: the patch may
// set other keys the checked one depends on (a scheduler type, a stage, ...).
// What the effect does at run time is the business of the key's own tests.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <type_traits>

#include "engine/config/config.h"

namespace hybrid::engine {
namespace {

using nlohmann::json;

template <class T>
std::string text_of(const T& v) {
  if constexpr (std::is_same_v<T, kernels::DType>) {
    return std::string(kernels::dtype_name(v));
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(to_string(v));
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    std::string s;
    for (const auto& x : v) s += x + ";";
    return s;
  } else {
    return fmt::format("{}", v);
  }
}

struct Probe {
  enum Kind { field, warns, only_default } kind = field;
  std::function<std::string(const Config&)> get;  // field
};
#define FIELD(member)                                               \
  Probe {                                                           \
    Probe::field, [](const Config& c) { return text_of(c.member); } \
  }
const Probe WARNS{Probe::warns, {}};
const Probe ONLY_DEFAULT{Probe::only_default, {}};

struct KeyCheck {
  const char* key;    // as docs/config.md writes it
  const char* patch;  // merged over the base config
  Probe probe;
  int world = 1;  // ranks the config is parsed for (pipeline stages need several)
};

// clang-format off
const KeyCheck kKeyChecks[] = {
    // ---- batch size
    {"train_batch_size", R"({"train_batch_size": 8})", FIELD(gradient_accumulation_steps)},
    {"train_micro_batch_size_per_gpu", R"({"train_micro_batch_size_per_gpu": 4})", FIELD(train_micro_batch_size_per_gpu)},
    {"gradient_accumulation_steps", R"({"gradient_accumulation_steps": 3})", FIELD(gradient_accumulation_steps)},
    // ---- optimizer
    {"optimizer.type", R"({"optimizer": {"type": "Adam"}})", FIELD(optimizer.type)},
    {"optimizer.params.lr", R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.5}}})", FIELD(optimizer.lr)},
    {"optimizer.params.betas", R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.8, 0.9]}}})", FIELD(optimizer.beta2)},
    {"optimizer.params.eps", R"({"optimizer": {"type": "AdamW", "params": {"eps": 0.01}}})", FIELD(optimizer.eps)},
    {"optimizer.params.weight_decay", R"({"optimizer": {"type": "AdamW", "params": {"weight_decay": 0.1}}})", FIELD(optimizer.weight_decay)},
    {"optimizer.params.bias_correction", R"({"optimizer": {"type": "AdamW", "params": {"bias_correction": false}}})", FIELD(optimizer.bias_correction)},
    {"optimizer.params.adam_w_mode", R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})", FIELD(optimizer.adam_w_mode)},
    {"optimizer.params.max_coeff", R"({"optimizer": {"type": "Lamb", "params": {"max_coeff": 5.0}}})", FIELD(optimizer.max_coeff)},
    {"optimizer.params.min_coeff", R"({"optimizer": {"type": "Lamb", "params": {"min_coeff": 0.05}}})", FIELD(optimizer.min_coeff)},
    {"optimizer.params.eps_inside_sqrt", R"({"optimizer": {"type": "Lamb", "params": {"eps_inside_sqrt": true}}})", FIELD(optimizer.eps_inside_sqrt)},
    {"optimizer.params.momentum", R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}})", FIELD(optimizer.momentum)},
    {"optimizer.params.dampening", R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9, "dampening": 0.1}}})", FIELD(optimizer.dampening)},
    {"optimizer.params.nesterov", R"({"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9, "nesterov": true}}})", FIELD(optimizer.nesterov)},
    {"optimizer.params.freeze_step", R"({"optimizer": {"type": "OneBitAdam", "params": {"freeze_step": 10}}})", FIELD(optimizer.freeze_step)},
    {"optimizer.params.comm_backend_name", R"({"optimizer": {"type": "OneBitAdam", "params": {"comm_backend_name": "mpi"}}})", FIELD(optimizer.comm_backend_name)},
    {"optimizer.params.cuda_aware", R"({"optimizer": {"type": "OneBitAdam", "params": {"cuda_aware": true}}})", FIELD(optimizer.cuda_aware)},
    {"optimizer.params.var_freeze_step", R"({"optimizer": {"type": "ZeroOneAdam", "params": {"var_freeze_step": 10}}})", FIELD(optimizer.var_freeze_step)},
    {"optimizer.params.var_update_scaler", R"({"optimizer": {"type": "ZeroOneAdam", "params": {"var_update_scaler": 4}}})", FIELD(optimizer.var_update_scaler)},
    {"optimizer.params.local_step_scaler", R"({"optimizer": {"type": "ZeroOneAdam", "params": {"local_step_scaler": 100}}})", FIELD(optimizer.local_step_scaler)},
    {"optimizer.params.local_step_clipper", R"({"optimizer": {"type": "ZeroOneAdam", "params": {"local_step_clipper": 8}}})", FIELD(optimizer.local_step_clipper)},
    {"optimizer.params.coeff_beta", R"({"optimizer": {"type": "OneBitLamb", "params": {"coeff_beta": 0.5}}})", FIELD(optimizer.coeff_beta)},
    {"optimizer.params.factor_max", R"({"optimizer": {"type": "OneBitLamb", "params": {"factor_max": 2.0}}})", FIELD(optimizer.factor_max)},
    {"optimizer.params.factor_min", R"({"optimizer": {"type": "OneBitLamb", "params": {"factor_min": 0.25}}})", FIELD(optimizer.factor_min)},
    {"optimizer.params.factor_threshold", R"({"optimizer": {"type": "OneBitLamb", "params": {"factor_threshold": 0.2}}})", FIELD(optimizer.factor_threshold)},
    // ---- scheduler (scheduler.params)
    {"warmup_min_lr", R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0001}}})", FIELD(scheduler.warmup_min_lr)},
    {"warmup_max_lr", R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 0.5}}})", FIELD(scheduler.warmup_max_lr)},
    {"warmup_num_steps", R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 7}}})", FIELD(scheduler.warmup_num_steps)},
    {"warmup_type", R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear"}}})", FIELD(scheduler.warmup_type)},
    {"total_num_steps", R"({"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 100}}})", FIELD(scheduler.total_num_steps)},
    {"warmup_min_ratio", R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "warmup_min_ratio": 0.2}}})", FIELD(scheduler.warmup_min_ratio)},
    {"cos_min_ratio", R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "cos_min_ratio": 0.2}}})", FIELD(scheduler.cos_min_ratio)},
    {"cycle_min_lr", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01}}})", FIELD(scheduler.cycle_min_lr)},
    {"cycle_max_lr", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01}}})", FIELD(scheduler.cycle_max_lr)},
    {"cycle_first_step_size", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_step_size": 7}}})", FIELD(scheduler.cycle_first_step_size)},
    {"cycle_second_step_size", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_second_step_size": 7}}})", FIELD(scheduler.cycle_second_step_size)},
    {"decay_step_size", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "decay_step_size": 7}}})", FIELD(scheduler.decay_step_size)},
    {"decay_lr_rate", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "decay_lr_rate": 0.5}}})", FIELD(scheduler.decay_lr_rate)},
    {"cycle_momentum", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_momentum": false}}})", FIELD(scheduler.cycle_momentum)},
    {"cycle_min_mom", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_min_mom": 0.5}}})", FIELD(scheduler.cycle_min_mom)},
    {"cycle_max_mom", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_max_mom": 0.95}}})", FIELD(scheduler.cycle_max_mom)},
    {"decay_mom_rate", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "decay_mom_rate": 0.1}}})", FIELD(scheduler.decay_mom_rate)},
    {"lr_range_test_min_lr", R"({"scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_min_lr": 0.01}}})", FIELD(scheduler.lr_range_test_min_lr)},
    {"lr_range_test_step_size", R"({"scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_step_size": 7}}})", FIELD(scheduler.lr_range_test_step_size)},
    {"lr_range_test_step_rate", R"({"scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_step_rate": 2.0}}})", FIELD(scheduler.lr_range_test_step_rate)},
    {"lr_range_test_staircase", R"({"scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_staircase": true}}})", FIELD(scheduler.lr_range_test_staircase)},
    // ---- training scalars
    {"gradient_clipping", R"({"gradient_clipping": 1.0})", FIELD(gradient_clipping)},
    {"steps_per_print", R"({"steps_per_print": 3})", FIELD(steps_per_print)},
    {"wall_clock_breakdown", R"({"wall_clock_breakdown": true})", FIELD(wall_clock_breakdown)},
    // ---- mixed precision
    {"fp16.enabled", R"({"fp16": {"enabled": true}})", FIELD(fp16.enabled)},
    {"fp16.loss_scale", R"({"fp16": {"enabled": true, "loss_scale": 128}})", FIELD(fp16.loss_scale)},
    {"fp16.initial_scale_power", R"({"fp16": {"enabled": true, "initial_scale_power": 8}})", FIELD(fp16.initial_scale_power)},
    {"fp16.loss_scale_window", R"({"fp16": {"enabled": true, "loss_scale_window": 10}})", FIELD(fp16.loss_scale_window)},
    {"fp16.hysteresis", R"({"fp16": {"enabled": true, "hysteresis": 5}})", FIELD(fp16.hysteresis)},
    {"fp16.consecutive_hysteresis", R"({"fp16": {"enabled": true, "consecutive_hysteresis": true}})", FIELD(fp16.consecutive_hysteresis)},
    {"fp16.min_loss_scale", R"({"fp16": {"enabled": true, "min_loss_scale": 4}})", FIELD(fp16.min_loss_scale)},
    {"bf16.enabled", R"({"bf16": {"enabled": true}})", FIELD(bf16)},
    {"bfloat16.enabled", R"({"bfloat16": {"enabled": true}})", FIELD(bf16)},
    {"data_types.grad_accum_dtype", R"({"data_types": {"grad_accum_dtype": "bf16"}})", FIELD(grad_accum_dtype)},
    // ---- ZeRO
    {"zero_optimization.stage", R"({"zero_optimization": {"stage": 2}})", FIELD(zero.stage)},
    {"zero_optimization.reduce_bucket_size", R"({"zero_optimization": {"reduce_bucket_size": 1000}})", FIELD(zero.reduce_bucket_size)},
    {"zero_optimization.allgather_bucket_size", R"({"zero_optimization": {"allgather_bucket_size": 1000}})", FIELD(zero.allgather_bucket_size)},
    {"zero_optimization.overlap_comm", R"({"zero_optimization": {"overlap_comm": true}})", FIELD(zero.overlap_comm)},
    {"zero_optimization.reduce_scatter", R"({"zero_optimization": {"stage": 2, "reduce_scatter": false}})", FIELD(zero.reduce_scatter)},
    {"zero_optimization.stage3_prefetch_bucket_size", R"({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 1000}})", FIELD(zero.stage3_prefetch_bucket_size)},
    {"zero_optimization.prefetch_bucket_size", R"({"zero_optimization": {"stage": 3, "prefetch_bucket_size": 1000}})", FIELD(zero.stage3_prefetch_bucket_size)},
    {"zero_optimization.stage3_param_persistence_threshold", R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 10}})", FIELD(zero.stage3_param_persistence_threshold)},
    {"zero_optimization.param_persistence_threshold", R"({"zero_optimization": {"stage": 3, "param_persistence_threshold": 10}})", FIELD(zero.stage3_param_persistence_threshold)},
    {"zero_optimization.stage3_max_live_parameters", R"({"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1000}})", FIELD(zero.stage3_max_live_parameters)},
    {"zero_optimization.max_live_parameters", R"({"zero_optimization": {"stage": 3, "max_live_parameters": 1000}})", FIELD(zero.stage3_max_live_parameters)},
    {"zero_optimization.offload_optimizer.device", R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})", FIELD(zero.offload_optimizer.device)},
    {"zero_optimization.offload_optimizer.pin_memory", R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}}})", FIELD(zero.offload_optimizer.pin_memory)},
    {"zero_optimization.offload_optimizer.nvme_path", R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}})", FIELD(zero.offload_optimizer.nvme_path)},
    {"zero_optimization.offload_param.device", R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})", FIELD(zero.offload_param.device)},
    {"zero_optimization.offload_param.pin_memory", R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pin_memory": true}}})", FIELD(zero.offload_param.pin_memory)},
    {"zero_optimization.offload_param.nvme_path", R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}})", FIELD(zero.offload_param.nvme_path)},
    {"zero_optimization.offload_optimizer.buffer_count", R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme", "buffer_count": 2}}})", FIELD(zero.offload_optimizer.buffer_count)},
    {"zero_optimization.offload_param.buffer_count", R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme", "buffer_count": 2}}})", FIELD(zero.offload_param.buffer_count)},
    {"zero_optimization.offload_param.buffer_size", R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme", "buffer_size": 1000}}})", FIELD(zero.offload_param.buffer_size)},
    {"aio.block_size", R"({"aio": {"block_size": 8192}})", FIELD(aio.block_size)},
    {"aio.queue_depth", R"({"aio": {"queue_depth": 2}})", FIELD(aio.queue_depth)},
    {"aio.thread_count", R"({"aio": {"thread_count": 2}})", FIELD(aio.thread_count)},
    {"aio.single_submit", R"({"aio": {"single_submit": true}})", FIELD(aio.single_submit)},
    {"aio.overlap_events", R"({"aio": {"overlap_events": false}})", FIELD(aio.overlap_events)},
    {"activation_checkpointing", R"({"activation_checkpointing": {}})", FIELD(activation_checkpointing.every)},
    {"activation_checkpointing.number_checkpoints", R"({"hybrid": {"model": {"n_layer": 4}}, "activation_checkpointing": {"number_checkpoints": 2}})", FIELD(activation_checkpointing.every)},
    {"activation_checkpointing.cpu_checkpointing", R"({"activation_checkpointing": {"cpu_checkpointing": true}})", FIELD(activation_checkpointing.cpu_checkpointing)},
    {"activation_checkpointing.synchronize_checkpoint_boundary", R"({"activation_checkpointing": {"synchronize_checkpoint_boundary": true}})", FIELD(activation_checkpointing.synchronize_checkpoint_boundary)},
    {"activation_checkpointing.profile", R"({"activation_checkpointing": {"profile": true}})", FIELD(activation_checkpointing.profile)},
    {"hybrid.activation_checkpointing.every", R"({"hybrid": {"activation_checkpointing": {"every": 2}}})", FIELD(activation_checkpointing.every)},
    // ---- profilers
    {"flops_profiler.enabled", R"({"flops_profiler": {"enabled": true}})", FIELD(flops_profiler.enabled)},
    {"flops_profiler.profile_step", R"({"flops_profiler": {"enabled": true, "profile_step": 3}})", FIELD(flops_profiler.profile_step)},
    {"flops_profiler.module_depth", R"({"flops_profiler": {"enabled": true, "module_depth": 1}})", FIELD(flops_profiler.module_depth)},
    {"flops_profiler.top_modules", R"({"flops_profiler": {"enabled": true, "top_modules": 3}})", FIELD(flops_profiler.top_modules)},
    {"flops_profiler.detailed", R"({"flops_profiler": {"enabled": true, "detailed": false}})", FIELD(flops_profiler.detailed)},
    {"flops_profiler.output_file", R"({"flops_profiler": {"enabled": true, "output_file": "f.txt"}})", FIELD(flops_profiler.output_file)},
    {"comms_logger.enabled", R"({"comms_logger": {"enabled": true}})", FIELD(comms_logger.enabled)},
    {"hybrid_engine.enabled", R"({"hybrid_engine": {"enabled": true}})", FIELD(hybrid_engine.enabled)},
    {"hybrid_engine.max_out_tokens", R"({"hybrid_engine": {"max_out_tokens": 64}})", FIELD(hybrid_engine.max_out_tokens)},
    {"hybrid_engine.inference_tp_size", R"({"hybrid_engine": {"inference_tp_size": 2}})", FIELD(hybrid_engine.inference_tp_size), 2},
    {"hybrid_engine.release_inference_cache", R"({"hybrid_engine": {"release_inference_cache": true}})", FIELD(hybrid_engine.release_inference_cache)},
    {"hybrid_engine.pin_parameters", R"({"hybrid_engine": {"pin_parameters": false}})", FIELD(hybrid_engine.pin_parameters)},
    {"hybrid_engine.tp_gather_partition_size", R"({"hybrid_engine": {"tp_gather_partition_size": 4}})", WARNS},
    {"comms_logger.verbose", R"({"comms_logger": {"enabled": true, "verbose": true}})", FIELD(comms_logger.verbose)},
    {"comms_logger.prof_all", R"({"comms_logger": {"enabled": true, "prof_all": false}})", FIELD(comms_logger.prof_all)},
    {"comms_logger.prof_ops", R"({"comms_logger": {"enabled": true, "prof_all": false, "prof_ops": ["all_reduce"]}})", FIELD(comms_logger.prof_ops)},
    {"tensor_model_parallel_size", R"({"tensor_model_parallel_size": 2})", FIELD(parallel.tensor), 2},
    {"pipeline.stages", R"({"pipeline": {"stages": 2}})", FIELD(parallel.pipeline_stages), 2},
    {"pipeline.partition", R"({"pipeline": {"stages": 2, "partition": "uniform"}})", FIELD(parallel.partition), 2},
    {"pipeline.activation_checkpoint_interval", R"({"pipeline": {"stages": 2, "activation_checkpoint_interval": 1}})", FIELD(parallel.activation_checkpoint_interval), 2},
    // ---- accepted with a warning
    {"zero_optimization.contiguous_gradients", R"({"zero_optimization": {"stage": 2, "contiguous_gradients": true}})", WARNS},
    {"cycle_first_stair_count", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_stair_count": 2}}})", WARNS},
    {"cycle_second_stair_count", R"({"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_second_stair_count": 2}}})", WARNS},
    {"activation_checkpointing.partition_activations", R"({"activation_checkpointing": {"partition_activations": true}})", WARNS},
    {"activation_checkpointing.contiguous_memory_optimization", R"({"activation_checkpointing": {"contiguous_memory_optimization": true}})", WARNS},
    // ---- the "hybrid" block
    {"hybrid.model.type", R"({"hybrid": {"model": {"type": "llama"}}})", FIELD(model.type)},
    {"hybrid.model.n_layer", R"({"hybrid": {"model": {"n_layer": 2}}})", FIELD(model.n_layer)},
    {"hybrid.model.n_embd", R"({"hybrid": {"model": {"n_embd": 64}}})", FIELD(model.n_embd)},
    {"hybrid.model.n_head", R"({"hybrid": {"model": {"n_head": 8}}})", FIELD(model.n_head)},
    {"hybrid.model.vocab_size", R"({"hybrid": {"model": {"vocab_size": 100}}})", FIELD(model.vocab_size)},
    {"hybrid.model.padded_vocab_size", R"({"hybrid": {"model": {"padded_vocab_size": 8200}}})", FIELD(padded_vocab())},
    {"hybrid.model.seq_len", R"({"hybrid": {"model": {"seq_len": 64}}})", FIELD(model.seq_len)},
    {"hybrid.model.n_kv_head", R"({"hybrid": {"model": {"type": "llama", "n_kv_head": 2}}})", FIELD(model.n_kv_head)},
    {"hybrid.model.intermediate_size", R"({"hybrid": {"model": {"type": "llama", "intermediate_size": 640}}})", FIELD(model.intermediate_size)},
    {"hybrid.model.rope_theta", R"({"hybrid": {"model": {"type": "llama", "rope_theta": 500000}}})", FIELD(model.rope_theta)},
    {"hybrid.model.norm_eps", R"({"hybrid": {"model": {"type": "llama", "norm_eps": 1e-6}}})", FIELD(model.norm_eps)},
    {"hybrid.model.tie_embeddings", R"({"hybrid": {"model": {"type": "llama", "tie_embeddings": false}}})", FIELD(model.tie_embeddings)},
    {"hybrid.data", R"({"hybrid": {"data": {"train": "shards/*.bin"}}})", FIELD(data.synthetic)},
    {"hybrid.data.train", R"({"hybrid": {"data": {"train": "shards/*.bin"}}})", FIELD(data.train)},
    {"hybrid.data.val", R"({"hybrid": {"data": {"train": "shards/*.bin", "val": "val/*.bin"}}})", FIELD(data.val)},
    {"hybrid.data.synthetic.tokens", R"({"hybrid": {"data": {"synthetic": {"tokens": 1000}}}})", FIELD(data.synthetic_tokens)},
    {"hybrid.data.synthetic.val_tokens", R"({"hybrid": {"data": {"synthetic": {"val_tokens": 0}}}})", FIELD(data.synthetic_val_tokens)},
    {"hybrid.data.synthetic.branching", R"({"hybrid": {"data": {"synthetic": {"branching": 2}}}})", FIELD(data.synthetic_branching)},
    {"hybrid.data.synthetic.noise", R"({"hybrid": {"data": {"synthetic": {"noise": 0.5}}}})", FIELD(data.synthetic_noise)},
    {"hybrid.data.val_every", R"({"hybrid": {"data": {"synthetic": true, "val_every": 5}}})", FIELD(data.val_every)},
    {"hybrid.data.val_batches", R"({"hybrid": {"data": {"synthetic": true, "val_batches": 3}}})", FIELD(data.val_batches)},
    {"hybrid.data.packing", R"({"hybrid": {"data": {"train": "s/*.bin", "packing": true}}})", FIELD(data.packing)},
    {"hybrid.data.separator", R"({"hybrid": {"data": {"train": "s/*.bin", "separator": 3}}})", FIELD(data.separator)},
    {"hybrid.data.shuffle", R"({"hybrid": {"data": {"train": "s/*.bin", "shuffle": false}}})", FIELD(data.shuffle)},
    {"hybrid.data.seed", R"({"hybrid": {"data": {"train": "s/*.bin", "seed": 9}}})", FIELD(data.shuffle_seed.value_or(0))},
    {"hybrid.data.dynamic_batching.enabled", R"({"hybrid": {"data": {"train": "s/*.bin", "dynamic_batching": {"enabled": true}}}})", FIELD(data.dynamic_batching.enabled)},
    {"hybrid.data.dynamic_batching.max_tokens", R"({"hybrid": {"data": {"train": "s/*.bin", "dynamic_batching": {"max_tokens": 512}}}})", FIELD(data.dynamic_batching.max_tokens)},
    {"hybrid.data.dynamic_batching.min_batch", R"({"hybrid": {"data": {"train": "s/*.bin", "dynamic_batching": {"min_batch": 2}}}})", FIELD(data.dynamic_batching.min_batch)},
    {"hybrid.data.dynamic_batching.max_batch", R"({"hybrid": {"data": {"train": "s/*.bin", "dynamic_batching": {"max_batch": 8}}}})", FIELD(data.dynamic_batching.max_batch)},
    {"hybrid.data.dynamic_batching.lr_scaling", R"({"hybrid": {"data": {"train": "s/*.bin", "dynamic_batching": {"lr_scaling": "sqrt"}}}})", FIELD(data.dynamic_batching.lr_scaling)},
    {"data_efficiency.seed", R"({"data_efficiency": {"seed": 5}})", FIELD(data.shuffle_seed.value_or(0))},
    {"data_efficiency.data_sampling.dynamic_batching.enabled", R"({"data_efficiency": {"data_sampling": {"dynamic_batching": {"enabled": true}}}, "hybrid": {"data": {"train": "s/*.bin"}}})", FIELD(data.dynamic_batching.enabled)},
    {"data_efficiency.data_sampling.dynamic_batching.max_tokens", R"({"data_efficiency": {"data_sampling": {"dynamic_batching": {"max_tokens": 512}}}})", FIELD(data.dynamic_batching.max_tokens)},
    {"data_efficiency.data_sampling.dynamic_batching.min_batch_size", R"({"data_efficiency": {"data_sampling": {"dynamic_batching": {"min_batch_size": 2}}}})", FIELD(data.dynamic_batching.min_batch)},
    {"data_efficiency.data_sampling.dynamic_batching.max_batch_size", R"({"data_efficiency": {"data_sampling": {"dynamic_batching": {"max_batch_size": 8}}}})", FIELD(data.dynamic_batching.max_batch)},
    {"data_efficiency.data_sampling.dynamic_batching.lr_scaling_method", R"({"data_efficiency": {"data_sampling": {"dynamic_batching": {"lr_scaling_method": "sqrt"}}}})", FIELD(data.dynamic_batching.lr_scaling)},
    {"hybrid.data.seq_len", R"({"hybrid": {"model": {"seq_len": 64}, "data": {"synthetic": {"tokens": 100000}, "seq_len": 16}}})", FIELD(seq_len())},
    {"hybrid.checkpoint.dir", R"({"hybrid": {"checkpoint": {"dir": "ckpt"}}})", FIELD(checkpoint.dir)},
    {"hybrid.checkpoint.interval", R"({"hybrid": {"checkpoint": {"interval": 5}}})", FIELD(checkpoint.interval)},
    {"hybrid.checkpoint.optimizer_interval", R"({"hybrid": {"checkpoint": {"optimizer_interval": 5}}})", FIELD(checkpoint.optimizer_interval)},
    {"hybrid.checkpoint.keep_last", R"({"hybrid": {"checkpoint": {"keep_last": 2}}})", FIELD(checkpoint.keep_last)},
    {"hybrid.init_from", R"({"hybrid": {"init_from": "gpt2.bin"}})", FIELD(init_from)},
    {"hybrid.device", R"({"hybrid": {"device": "cpu"}})", FIELD(device)},
    {"hybrid.memory_budget", R"({"hybrid": {"memory_budget": "1GiB"}})", FIELD(memory_budget)},
    {"hybrid.seed", R"({"hybrid": {"seed": 5}})", FIELD(seed)},
    {"hybrid.threads", R"({"hybrid": {"threads": 3}})", FIELD(threads)},
    {"hybrid.gemm", R"({"hybrid": {"gemm": "openblas"}})", FIELD(gemm)},
    {"hybrid.profiler.trace", R"({"hybrid": {"profiler": {"trace": true}}})", FIELD(profiler.trace)},
    {"hybrid.profiler.trace_steps", R"({"hybrid": {"profiler": {"trace_steps": 5}}})", FIELD(profiler.trace_steps)},
    {"hybrid.profiler.chrome_trace", R"({"hybrid": {"profiler": {"chrome_trace": "t.json"}}})", FIELD(profiler.chrome_trace)},
    {"hybrid.rollout.every", R"({"hybrid": {"rollout": {"every": 2, "prompts": "p.jsonl"}}})", FIELD(rollout.every)},
    {"hybrid.rollout.prompts", R"({"hybrid": {"rollout": {"prompts": "p.jsonl"}}})", FIELD(rollout.prompts)},
    {"hybrid.rollout.tokenizer", R"({"hybrid": {"rollout": {"tokenizer": "tokenizer.json"}}})", FIELD(rollout.tokenizer)},
    {"hybrid.rollout.max_new_tokens", R"({"hybrid": {"rollout": {"max_new_tokens": 3}}})", FIELD(rollout.max_new_tokens)},
    {"hybrid.rollout.temperature", R"({"hybrid": {"rollout": {"temperature": 0.7}}})", FIELD(rollout.sampling.temperature)},
    {"hybrid.rollout.top_k", R"({"hybrid": {"rollout": {"top_k": 5}}})", FIELD(rollout.sampling.top_k)},
    {"hybrid.rollout.top_p", R"({"hybrid": {"rollout": {"top_p": 0.9}}})", FIELD(rollout.sampling.top_p)},
    {"hybrid.rollout.seed", R"({"hybrid": {"rollout": {"seed": 3}}})", FIELD(rollout.sampling.seed)},
    {"hybrid.rollout.batch", R"({"hybrid": {"rollout": {"batch": 2}}})", FIELD(rollout.batch)},
    {"hybrid.rollout.cache_dtype", R"({"hybrid": {"rollout": {"cache_dtype": "bf16"}}})", FIELD(rollout.cache_dtype.value_or(kernels::DType::f32))},
};
// clang-format on

constexpr const char* kWarnedSection = "Keys accepted with a warning";

struct DocKey {
  std::string key;
  std::string section;  // the "## ..." heading it is documented under
};

// "a.{b,c}" → a.b, a.c (one level, as the page writes groups of siblings).
std::vector<std::string> expand_braces(const std::string& key) {
  const size_t open = key.find('{'), close = key.find('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return {key};
  std::vector<std::string> out;
  std::stringstream items(key.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(items, item, ',');)
    out.push_back(key.substr(0, open) + item + key.substr(close + 1));
  return out;
}

std::string parent_of(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot + 1);
}

// The keys of one first cell: `a.b.c`, then aliases: "`.d`" (a sibling of the
// first key), "`e`" (a sibling) or "`f.g`" (a full path).
std::vector<std::string> keys_of_cell(const std::string& cell) {
  static const std::regex code("`([^`]+)`");
  std::vector<std::string> tokens;
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), code); it != std::sregex_iterator();
       ++it)
    tokens.push_back((*it)[1]);
  std::vector<std::string> keys;
  if (tokens.empty()) return keys;
  keys = expand_braces(tokens[0]);
  const std::string parent = parent_of(tokens[0]);
  for (size_t i = 1; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t[0] == '.')
      keys.push_back(parent + t.substr(1));
    else if (t.find('.') == std::string::npos)
      keys.push_back(parent + t);
    else
      keys.push_back(t);
  }
  return keys;
}

std::vector<DocKey> documented_keys() {
  std::ifstream in(std::string(HYBRID_SOURCE_DIR) + "/docs/config.md");
  EXPECT_TRUE(in) << "cannot read docs/config.md";
  std::vector<DocKey> out;
  std::string line, section;
  bool in_table = false, in_code = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (in_code) continue;
    if (line.rfind("## ", 0) == 0) section = line.substr(3);
    if (line.rfind("| key |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (line.rfind("|", 0) != 0) in_table = false;
    if (!in_table || line.rfind("|---", 0) == 0) continue;
    const size_t end = line.find('|', 1);
    for (const auto& key : keys_of_cell(line.substr(1, end - 1))) out.push_back({key, section});
  }
  return out;
}

const KeyCheck* find_check(const std::string& key) {
  for (const auto& c : kKeyChecks)
    if (key == c.key) return &c;
  return nullptr;
}

// Every path in j ("a", "a.b", ...) whose trailing components are `key`'s.
std::vector<json::json_pointer> paths_ending_with(const json& j, const std::string& key,
                                                  const json::json_pointer& at) {
  std::vector<json::json_pointer> out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const json::json_pointer p = at / it.key();
    std::string dotted = p.to_string().substr(1);
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    if (dotted == key || (dotted.size() > key.size() &&
                          dotted.compare(dotted.size() - key.size(), key.size(), key) == 0 &&
                          dotted[dotted.size() - key.size() - 1] == '.'))
      out.push_back(p);
    for (auto& q : paths_ending_with(*it, key, p)) out.push_back(q);
  }
  return out;
}

std::string dotted(const json::json_pointer& p) {
  std::string s = p.to_string().substr(1);
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

struct Parsed {
  std::optional<Config> config;
  std::string error;  // ConfigError's message when parsing failed
};

Parsed parse(const json& j, int world) {
  Parsed p;
  try {
    p.config = parse_config(j, world);
  } catch (const ConfigError& e) {
    p.error = e.what();
  }
  return p;
}

bool warns_about(const Parsed& p, const std::string& path) {
  if (!p.config) return false;
  for (const auto& w : p.config->warnings)
    if (w.find(path) != std::string::npos) return true;
  return false;
}

// The check of one key: empty when it passes, else why not.
std::string run_check(const KeyCheck& check) {
  json with = {{"train_micro_batch_size_per_gpu", 1}};
  with.merge_patch(json::parse(check.patch));
  const auto paths = paths_ending_with(with, check.key, json::json_pointer());
  if (paths.size() != 1)
    return fmt::format("the patch must set the key exactly once; found it {} times", paths.size());
  const std::string path = dotted(paths[0]);
  json without = with;
  without.at(paths[0].parent_pointer()).erase(paths[0].back());
  const Parsed w = parse(with, check.world), wo = parse(without, check.world);
  switch (check.probe.kind) {
    case Probe::only_default:
      if (w.error.find(path) == std::string::npos)
        return "a non-default value must be refused naming " + path +
               ", got: " + (w.error.empty() ? "no error" : w.error);
      return {};
    case Probe::warns:
      if (!w.config) return "the patch does not parse: " + w.error;
      if (!warns_about(w, path)) return "no warning names " + path;
      if (warns_about(wo, path)) return "a warning names " + path + " even without it";
      return {};
    case Probe::field:
      if (!w.config) return "the patch does not parse: " + w.error;
      if (std::find(w.config->ignored_keys.begin(), w.config->ignored_keys.end(), path) !=
          w.config->ignored_keys.end())
        return path + " is in ignored_keys";
      if (warns_about(w, path)) return path + " is warned about: use WARNS";
      if (!wo.config) {  // a required key: without it the config is refused, naming it
        if (wo.error.find(path) == std::string::npos &&
            wo.error.find(check.key) == std::string::npos)
          return "without the key parsing fails without naming it: " + wo.error;
        return {};
      }
      if (check.probe.get(*w.config) == check.probe.get(*wo.config))
        return fmt::format("the probed field is {} with and without the key",
                           check.probe.get(*w.config));
      return {};
  }
  return "unknown probe";
}

TEST(ConfigKeys, EveryDocumentedKeyHasAnEffectOrIsWarnedAbout) {
  const auto docs = documented_keys();
  ASSERT_GT(docs.size(), 50u) << "docs/config.md: the key tables were not found";
  for (const auto& doc : docs) {
    SCOPED_TRACE(fmt::format("docs/config.md ({}): `{}`", doc.section, doc.key));
    const KeyCheck* check = find_check(doc.key);
    if (!check) {
      ADD_FAILURE() << "no check for this documented key: add a line to kKeyChecks in "
                       "tests/engine/config_keys_test.cpp (how: see the top of that file)";
      continue;
    }
    const bool warned_section = doc.section == kWarnedSection;
    EXPECT_EQ(check->probe.kind == Probe::warns, warned_section)
        << (warned_section ? "documented as accepted with a warning, but probed as effective"
                           : "probed as WARNS but documented with an effect: move it under \"" +
                                 std::string(kWarnedSection) + "\"");
    const std::string why = run_check(*check);
    EXPECT_TRUE(why.empty()) << why;
  }
}

TEST(ConfigKeys, EveryCheckIsForADocumentedKey) {
  std::set<std::string> documented;
  for (const auto& d : documented_keys()) documented.insert(d.key);
  std::set<std::string> seen;
  for (const auto& c : kKeyChecks) {
    EXPECT_TRUE(documented.count(c.key))
        << "kKeyChecks has `" << c.key << "`, which docs/config.md does not document";
    EXPECT_TRUE(seen.insert(c.key).second) << "`" << c.key << "` is checked twice";
  }
}

// The walker itself: it must see what the page means, or it checks nothing.
TEST(ConfigKeys, TheWalkerReadsBracesAliasesAndSiblings) {
  EXPECT_EQ(keys_of_cell(" `a.b.{x,y}` "), (std::vector<std::string>{"a.b.x", "a.b.y"}));
  EXPECT_EQ(keys_of_cell(" `z.stage3_p` (alias `p`) "),
            (std::vector<std::string>{"z.stage3_p", "z.p"}));
  EXPECT_EQ(keys_of_cell(" `h.data.train` / `.val` "),
            (std::vector<std::string>{"h.data.train", "h.data.val"}));
  EXPECT_EQ(keys_of_cell(" `bf16.enabled` (or the older `bfloat16.enabled`) "),
            (std::vector<std::string>{"bf16.enabled", "bfloat16.enabled"}));
  EXPECT_EQ(keys_of_cell(" `warmup_min_lr` "), (std::vector<std::string>{"warmup_min_lr"}));
  // A check that cannot pass is reported: a default value changes nothing, a
  // key the parser does not read is ignored, a warned key probed as a field.
  EXPECT_NE(run_check({"steps_per_print", R"({"steps_per_print": 10})", FIELD(steps_per_print)}),
            "");
  EXPECT_NE(run_check({"hybrid.colour", R"({"hybrid": {"colour": "blue"}})", FIELD(seed)}), "");
  EXPECT_NE(
      run_check({"zero_optimization.contiguous_gradients",
                 R"({"zero_optimization": {"contiguous_gradients": false}})", FIELD(zero.stage)}),
      "");
  EXPECT_NE(run_check({"wall_clock_breakdown", R"({"wall_clock_breakdown": true})", WARNS}), "");
}

}  // namespace
}  // namespace hybrid::engine
