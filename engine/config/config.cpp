// ds_config.json → Config, with DeepSpeed's semantics for the keys we implement
// (runtime/config.py, zero/config.py, precision_config.py). The optimizer and
// scheduler blocks are parsed in config_optim.cpp, the batch sizes resolved in
// config_batch.cpp, the "hybrid" block in config_hybrid.cpp.
#include "engine/config/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/json_read.h"
#include "base/json_text.h"
#include "engine/config/config_reader.h"

namespace hybrid::engine {

using config_detail::fail;
using config_detail::ObjectReader;
using config_detail::resolve_batch;
using nlohmann::json;

namespace {

constexpr int64_t kIntMax = INT_MAX;

void parse_fp16(const json& block, Config& c) {
  ObjectReader r(block, "fp16", c.ignored_keys);
  Fp16Config& f = c.fp16;
  if (auto v = r.boolean("enabled")) f.enabled = *v;
  if (auto v = r.number("loss_scale", 0.0, std::numeric_limits<double>::max(), false,
                        "a number >= 0 (0: dynamic loss scaling)"))
    f.loss_scale = float(*v);
  if (auto v = r.integer("initial_scale_power", 0, 127)) f.initial_scale_power = int(*v);
  if (auto v = r.integer("loss_scale_window", 1, kIntMax)) f.loss_scale_window = int(*v);
  if (auto v = r.integer("hysteresis", 1, kIntMax)) f.hysteresis = int(*v);
  if (auto v = r.boolean("consecutive_hysteresis")) f.consecutive_hysteresis = *v;
  if (auto v = r.number("min_loss_scale", 0.0, std::numeric_limits<double>::max(), true))
    f.min_loss_scale = float(*v);
  r.finish();
}

void parse_bf16(const json& block, const std::string& name, Config& c) {
  ObjectReader r(block, name, c.ignored_keys);
  if (auto v = r.boolean("enabled")) c.bf16 = *v;
  r.finish();
}

void parse_data_types(const json& block, Config& c) {
  ObjectReader r(block, "data_types", c.ignored_keys);
  if (auto v = r.string("grad_accum_dtype")) {
    try {
      c.grad_accum_dtype = kernels::parse_dtype(*v);
    } catch (const std::invalid_argument&) {
      fail("data_types.grad_accum_dtype", "one of \"fp32\", \"fp16\", \"bf16\"", json(*v));
    }
    c.grad_accum_dtype_set = true;
  }
  r.finish();
}

// params: the offload_param block (buffer_size is one of its keys; the
// optimizer's swap pipeline needs two buffers at least).
void parse_offload(const json& block, const std::string& path, bool params, OffloadConfig& o,
                   std::vector<std::string>& ignored) {
  ObjectReader r(block, path, ignored);
  if (auto v = r.choice("device", kOffloadDevices)) o.device = *v;
  if (auto v = r.boolean("pin_memory")) o.pin_memory = *v;
  if (auto v = r.string("nvme_path")) o.nvme_path = *v;
  if (auto v = r.integer("buffer_count", params ? 1 : 2, kIntMax)) o.buffer_count = int(*v);
  if (params)
    if (auto v = r.integer("buffer_size", 1)) o.buffer_size = *v;
  if (o.device == OffloadDevice::nvme && o.nvme_path.empty())
    throw ConfigError(
        fmt::format("config: {}.nvme_path must be given when device is \"nvme\"", path));
  r.finish();
}

// Parameter offload moves ZeRO-3's parameter partitions (DeepSpeed: "valid only
// with stage 3").
void check_offload_param(const ZeroConfig& zc) {
  const auto device = zc.offload_param.device;
  if (device != OffloadDevice::none && zc.stage != 3)
    throw ConfigError(fmt::format(
        "config: zero_optimization.offload_param.device \"{}\" needs zero_optimization.stage 3 "
        "(only stage 3 partitions parameters), got stage {}",
        to_string(device), zc.stage));
}

void parse_aio(const json& block, Config& c) {
  ObjectReader r(block, "aio", c.ignored_keys);
  AioConfig& a = c.aio;
  if (auto v = r.integer("block_size", 1)) {
    if (*v % 4096 != 0)
      fail("aio.block_size", "a positive multiple of 4096 (direct I/O alignment)",
           block["block_size"]);
    a.block_size = *v;
  }
  if (auto v = r.integer("queue_depth", 1, kIntMax)) a.queue_depth = int(*v);
  if (auto v = r.integer("thread_count", 1, kIntMax)) a.thread_count = int(*v);
  if (auto v = r.boolean("single_submit")) a.single_submit = *v;
  if (auto v = r.boolean("overlap_events")) a.overlap_events = *v;
  r.finish();
}

void parse_zero(const json& z, Config& c) {
  ZeroConfig& zc = c.zero;
  if (z.is_boolean()) {  // DeepSpeed's deprecated form: true means stage 1
    zc.stage = z.get<bool>() ? 1 : 0;
    zc.overlap_comm = false;
    return;
  }
  if (!z.is_object()) fail("zero_optimization", "an object (or a boolean, the deprecated form)", z);
  ObjectReader r(z, "zero_optimization", c.ignored_keys);
  if (auto v = r.integer("stage", INT64_MIN, INT64_MAX, "0..3")) {
    if (*v < 0 || *v > 3) fail("zero_optimization.stage", "0..3", z["stage"]);
    zc.stage = int(*v);
  }
  if (auto v = r.integer("reduce_bucket_size", 1)) zc.reduce_bucket_size = *v;
  if (auto v = r.integer("allgather_bucket_size", 1)) zc.allgather_bucket_size = *v;
  // Gradients are always produced in place in contiguous buffers (the flat gradient
  // buffer at stages 0-1, bucket staging buffers at 2-3): nothing to copy or to turn off.
  if (auto v = r.boolean("contiguous_gradients"))
    c.warnings.push_back(fmt::format(
        "zero_optimization.contiguous_gradients ({}) has no effect: gradients are always "
        "written into contiguous buffers (the flat gradient buffer at stages 0-1, the bucket "
        "staging buffers at stages 2-3)",
        *v));
  if (auto v = r.boolean("reduce_scatter")) {
    zc.reduce_scatter = *v;
    // As in DeepSpeed, only stages 1-2 choose: stage 0 all-reduces, stage 3 reduce-scatters.
    if (!*v && (zc.stage == 0 || zc.stage == 3))
      c.warnings.push_back(fmt::format(
          "zero_optimization.reduce_scatter (false) has no effect at stage {}: stage {} always "
          "{}",
          zc.stage, zc.stage,
          zc.stage == 0 ? "all-reduces gradients" : "reduce-scatters gradients"));
  }
  // DeepSpeed's overlap_comm default depends on the stage: true for stage 3 only.
  const auto overlap = r.boolean("overlap_comm");
  zc.overlap_comm = overlap ? *overlap : zc.stage == 3;
  // Stage-3 knobs: DeepSpeed accepts both the stage3_ name and the plain alias.
  auto aliased = [&](const char* name, const char* alias, int64_t lo) {
    auto v = r.integer(name, lo);
    auto w = r.integer(alias, lo);
    return v ? v : w;
  };
  if (auto v = aliased("stage3_prefetch_bucket_size", "prefetch_bucket_size", 1))
    zc.stage3_prefetch_bucket_size = *v;
  if (auto v = aliased("stage3_param_persistence_threshold", "param_persistence_threshold", 0))
    zc.stage3_param_persistence_threshold = *v;
  if (auto v = aliased("stage3_max_live_parameters", "max_live_parameters", 1))
    zc.stage3_max_live_parameters = *v;
  // Deprecated booleans that DeepSpeed maps onto the offload blocks.
  if (auto v = r.boolean("cpu_offload"); v && *v) zc.offload_optimizer.device = OffloadDevice::cpu;
  if (auto v = r.boolean("cpu_offload_param"); v && *v)
    zc.offload_param.device = OffloadDevice::cpu;
  if (const json* o = r.object("offload_optimizer"))
    parse_offload(*o, "zero_optimization.offload_optimizer", false, zc.offload_optimizer,
                  c.ignored_keys);
  if (const json* o = r.object("offload_param"))
    parse_offload(*o, "zero_optimization.offload_param", true, zc.offload_param, c.ignored_keys);
  check_offload_param(zc);
  r.finish();
}

void parse_flops_profiler(const json& block, Config& c) {
  ObjectReader r(block, "flops_profiler", c.ignored_keys);
  FlopsProfilerConfig& f = c.flops_profiler;
  if (auto v = r.boolean("enabled")) f.enabled = *v;
  if (auto v = r.integer("profile_step", 1, kIntMax)) f.profile_step = int(*v);
  if (auto v = r.integer("module_depth", -1, kIntMax, "-1 (all) or a non-negative integer"))
    f.module_depth = int(*v);
  if (auto v = r.integer("top_modules", 1, kIntMax)) f.top_modules = int(*v);
  if (auto v = r.boolean("detailed")) f.detailed = *v;
  if (auto v = r.string("output_file")) f.output_file = *v;
  r.finish();
}

void parse_comms_logger(const json& block, Config& c) {
  ObjectReader r(block, "comms_logger", c.ignored_keys);
  CommsLoggerConfig& l = c.comms_logger;
  if (auto v = r.boolean("enabled")) l.enabled = *v;
  if (auto v = r.boolean("verbose")) l.verbose = *v;
  if (auto v = r.boolean("prof_all")) l.prof_all = *v;
  if (const json* ops = r.get("prof_ops")) {
    if (!ops->is_array()) fail("comms_logger.prof_ops", "a list of strings", *ops);
    for (const auto& op : *ops) {
      if (!op.is_string()) fail("comms_logger.prof_ops", "a list of strings", *ops);
      l.prof_ops.push_back(op.get<std::string>());
    }
  }
  r.finish();
}

}  // namespace

namespace {

// 3D parallelism's sizes (issue 16), read before the batch triad, which counts
// data-parallel ranks (DeepSpeed's dp world).
void parse_parallel_sizes(ObjectReader& top, int world_size, Config& c) {
  ParallelConfig& p = c.parallel;
  if (auto v = top.integer("tensor_model_parallel_size", 1, kIntMax)) p.tensor = int(*v);
  if (const json* block = top.object("pipeline")) {
    ObjectReader r(*block, "pipeline", c.ignored_keys);
    if (auto v = r.integer("stages", 1, kIntMax)) p.pipeline_stages = int(*v);
    if (auto v = r.string("partition")) p.partition = *v;
    if (auto v = r.integer("activation_checkpoint_interval", 0, kIntMax))
      p.activation_checkpoint_interval = int(*v);
    r.finish();
  }
  if (p.partition != "parameters" && p.partition != "uniform")
    throw ConfigError(fmt::format(
        "config: pipeline.partition \"{}\": expected \"parameters\" or \"uniform\"", p.partition));
  const int64_t model_ranks = int64_t(p.tensor) * p.pipeline_stages;
  if (world_size % model_ranks != 0)
    throw ConfigError(fmt::format(
        "config: tensor_model_parallel_size {} × pipeline.stages {} = {} does not divide the "
        "world of {} rank(s)",
        p.tensor, p.pipeline_stages, model_ranks, world_size));
  p.data_parallel = int(world_size / model_ranks);
}

// After zero_optimization: DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3
// (gradient and parameter partitioning need the whole backward on one rank).
void check_pipeline_with_zero(const Config& c) {
  const int pp = c.parallel.pipeline_stages;
  if (pp > 1 && c.zero.stage >= 2)
    throw ConfigError(fmt::format(
        "config: pipeline.stages {} with zero_optimization.stage {}: ZeRO stages 2 and 3 "
        "partition the gradients a pipeline stage accumulates over its micro-batches "
        "(DeepSpeed refuses the pair too); use stage 0 or 1",
        pp, c.zero.stage));
}

// After the model: Lamb's per-tensor trust ratio would see only a rank's piece.
void check_tensor_parallel(const Config& c) {
  const int tp = c.parallel.tensor;
  if (tp == 1) return;
  config_detail::check_tensor_split(c, tp, "tensor_model_parallel_size");
  if (c.optimizer.type == "Lamb")
    throw ConfigError(fmt::format(
        "config: optimizer {} with tensor_model_parallel_size {}: Lamb's per-tensor trust ratio "
        "needs whole tensors; use AdamW, Adam or SGD",
        c.optimizer.type, tp));
}

}  // namespace

namespace config_detail {

// Megatron's split gives each tensor-parallel rank whole heads and an equal
// share of the padded vocabulary.
void check_tensor_split(const Config& c, int tp, std::string_view key) {
  auto divides = [&](int n, const std::string& what) {
    if (n % tp != 0)
      throw ConfigError(
          fmt::format("config: {} {} does not divide {} {} (each rank holds an equal share)", key,
                      tp, what, n));
  };
  divides(c.model.n_head, "hybrid.model.n_head");  // n_embd then too: heads split it evenly
  // Grouped-query attention: each rank keeps whole key/value heads beside its
  // query heads.
  divides(c.model.kv_heads(), "hybrid.model.n_kv_head (key/value heads)");
  if (c.model.intermediate_size > 0)
    divides(c.model.intermediate_size, "hybrid.model.intermediate_size");
  divides(c.padded_vocab(), "the padded vocabulary (hybrid.model.padded_vocab_size)");
}

}  // namespace config_detail

Config parse_config(const json& j, int world_size) {
  if (world_size < 1)
    throw ConfigError(fmt::format("config: world_size must be at least 1, got {}", world_size));
  if (!j.is_object()) fail("the top level", "a JSON object", j);
  Config c;
  c.raw = j;
  ObjectReader top(j, "", c.ignored_keys);

  parse_parallel_sizes(top, world_size, c);
  resolve_batch(top, c.parallel.data_parallel, c);
  if (const json* o = top.object("optimizer")) config_detail::parse_optimizer(*o, c);
  // After the optimizer: WarmupLR's default is its lr, OneCycle's momentum needs its betas.
  if (const json* s = top.object("scheduler")) config_detail::parse_scheduler(*s, c);
  if (auto v = top.number("gradient_clipping", 0.0, std::numeric_limits<double>::max(), false,
                          "a number >= 0 (0: off)"))
    c.gradient_clipping = float(*v);
  if (auto v = top.integer("steps_per_print", 1, kIntMax)) c.steps_per_print = int(*v);
  if (auto v = top.boolean("wall_clock_breakdown")) c.wall_clock_breakdown = *v;

  if (const json* f = top.object("fp16")) parse_fp16(*f, c);
  // DeepSpeed reads "bf16", falling back to the older spelling "bfloat16".
  if (const json* b = top.object("bf16"))
    parse_bf16(*b, "bf16", c);
  else if (const json* b16 = top.object("bfloat16"))
    parse_bf16(*b16, "bfloat16", c);
  if (c.fp16.enabled && c.bf16)
    throw ConfigError(
        "config: fp16.enabled and bf16.enabled cannot both be true (bfloat16 and "
        "fp16 modes cannot be simultaneously enabled)");
  if (const json* d = top.object("data_types")) parse_data_types(*d, c);
  if (!c.grad_accum_dtype_set) c.grad_accum_dtype = c.param_dtype();

  if (const json* z = top.get("zero_optimization")) parse_zero(*z, c);
  if (const json* a = top.object("aio")) parse_aio(*a, c);
  if (const json* f = top.object("flops_profiler")) parse_flops_profiler(*f, c);
  if (const json* l = top.object("comms_logger")) parse_comms_logger(*l, c);
  if (const json* h = top.object("hybrid_engine")) config_detail::parse_hybrid_engine(*h, c);
  if (const json* e = top.object("data_efficiency")) config_detail::parse_data_efficiency(*e, c);
  const json* checkpointing = top.object("activation_checkpointing");
  if (checkpointing) config_detail::parse_activation_checkpointing(*checkpointing, c);
  // DeepSpeed turns the step timers on whenever the flops profiler is on.
  c.wall_clock_breakdown = c.wall_clock_breakdown || c.flops_profiler.enabled;

  check_pipeline_with_zero(c);
  if (const json* h = top.object("hybrid")) config_detail::parse_hybrid_block(*h, c);
  config_detail::resolve_activation_checkpointing(checkpointing != nullptr, c);
  check_tensor_parallel(c);
  config_detail::check_inference_tp(c, world_size);
  config_detail::check_documents(c);
  config_detail::check_onebit(c);
  top.finish();
  std::sort(c.ignored_keys.begin(), c.ignored_keys.end());
  return c;
}

Config load_config(const std::string& path, int world_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("config: cannot open {}: {}", path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(fmt::format("config: cannot read {}", path));
  const std::string text = ss.str();
  json j;
  try {
    j = base::parse_json_text(text);
  } catch (const base::JsonTextError& e) {
    throw ConfigError(fmt::format("config: {}: {}", path, e.what()));
  }
  return parse_config(j, world_size);
}

}  // namespace hybrid::engine
