// ds_config.json, parsed and validated: DeepSpeed's keys with DeepSpeed's
// semantics (for the keys we implement), plus our own top-level "hybrid" block.
//
// parse_config() resolves "auto" values and the batch triad, checks types and
// ranges, and throws ConfigError naming the key and the value at fault. Keys it
// does not implement are collected in Config::ignored_keys (reported once).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/config/devices.h"
#include "engine/generate/sampling.h"
#include "kernels/dtype.h"

namespace hybrid::engine {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;  // message starts with "config: "
};

struct ModelConfig {
  std::string type = "gpt2";
  int n_layer = 4;
  int n_embd = 256;
  int n_head = 4;
  int vocab_size = 8192;
  int padded_vocab_size = 0;  // 0: vocab_size rounded up to a multiple of 128
  int seq_len = 128;          // block size: the longest sequence (wpe rows)
  // What the Llama family varies (a family refuses values it has not: GPT-2
  // has as many key/value heads as heads, a 4·n_embd MLP, tied embeddings).
  int n_kv_head = 0;          // key/value heads (grouped-query attention); 0: n_head
  int intermediate_size = 0;  // the MLP's inner width; 0: the family's default
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;  // the norms' epsilon
  bool tie_embeddings = true;

  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
};

// DeepSpeed's variable batch size (data_efficiency.data_sampling.dynamic_batching;
// hybrid.data.dynamic_batching): a micro-batch is as many documents as fit a
// token budget, and each step's learning rate is scaled by its batch size.
struct DynamicBatching {
  bool enabled = false;
  int64_t max_tokens = 0;  // real tokens per micro-batch; 0: micro_batch × seq_len
  int min_batch = 1;       // documents per micro-batch, at least
  int max_batch = 0;       // at most (0: no limit)
  // "none" | "linear" | "sqrt": lr × f(documents in the step / train_batch_size)
  std::string lr_scaling = "linear";
};

struct DataConfig {
  bool synthetic = true;  // "synthetic": generated in memory, learnable structure
  // Training sequence length T (hybrid.data.seq_len): at most the block size
  // hybrid.model.seq_len, which is also its default (resolved by parse_config).
  int seq_len = 0;
  std::string train;  // glob of llm.c token shards
  std::string val;
  // Synthetic data ({"synthetic": {...}} form; engine/data/synthetic.h): a sparse
  // random Markov chain seeded from hybrid.seed.
  int64_t synthetic_tokens = int64_t(1) << 21;      // training stream length
  int64_t synthetic_val_tokens = int64_t(1) << 17;  // validation stream length
  int synthetic_branching = 4;                      // likely successors per token
  float synthetic_noise = 0.05f;                    // probability of a uniform random token
  // Validation (engine/validation.h): a forward-only pass over the val stream
  // every val_every optimizer steps and after the last (0: never), of
  // val_batches micro-batches per data-parallel rank (llm.c's val_max_steps).
  int64_t val_every = 0;
  int val_batches = 20;
  // Documents as units (engine/data/document_loader.h): rows pack whole
  // documents, attention stays inside each, positions restart per document and
  // padding has no loss. Implied by dynamic_batching.enabled.
  bool packing = false;
  int64_t separator = -1;                // the token before every document; -1: the stream's first
  bool shuffle = true;                   // documents in a new order each epoch
  std::optional<uint64_t> shuffle_seed;  // hybrid.data.seed; default hybrid.seed
  DynamicBatching dynamic_batching;
  bool documents() const { return packing || dynamic_batching.enabled; }
};

struct OptimizerConfig {
  // "Adam" | "AdamW" (DeepSpeed: Adam with adam_w_mode defaults to AdamW) | "Lamb" | "SGD"
  // | "OneBitAdam"
  std::string type = "AdamW";
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool adam_w_mode = true;
  bool bias_correction = true;  // Adam, Lamb
  // Lamb (DeepSpeed's FusedLamb): the trust ratio ||w|| / ||update|| is clamped to
  // [min_coeff, max_coeff]; eps_inside_sqrt puts eps under the square root.
  float max_coeff = 10.0f, min_coeff = 0.01f;
  bool eps_inside_sqrt = false;
  // SGD (torch.optim.SGD, which DeepSpeed builds for "SGD").
  float momentum = 0.0f, dampening = 0.0f;
  bool nesterov = false;
  // OneBitAdam (DeepSpeed's 1-bit Adam): Adam without bias correction for
  // freeze_step steps, then the variance frozen and only the momentum
  // exchanged, 1 bit a value (engine/optim/onebit_adam.cpp).
  int64_t freeze_step = 100000;
  bool cuda_aware = false;                 // MPI that reads device memory (read, not needed)
  std::string comm_backend_name = "nccl";  // "nccl" | "mpi": the communicator the engine has
  // ZeroOneAdam (DeepSpeed's 0/1 Adam): the variance updated at exponentially
  // spaced steps until var_freeze_step, local steps between synchronisations
  // growing by local_step_scaler up to local_step_clipper.
  int64_t var_freeze_step = 100000;
  int64_t var_update_scaler = 16;
  int64_t local_step_scaler = 32678;
  int64_t local_step_clipper = 16;
  // OneBitLamb (DeepSpeed's 1-bit LAMB): the frozen trust ratios' moving
  // average and the bounds of their per-step factor.
  float coeff_beta = 0.9f;
  float factor_max = 4.0f, factor_min = 0.5f, factor_threshold = 0.1f;
  // The optimizers that exchange compressed state instead of gradients.
  bool onebit() const {
    return type == "OneBitAdam" || type == "ZeroOneAdam" || type == "OneBitLamb";
  }
};

struct SchedulerConfig {
  std::string type;  // "" (constant lr) | WarmupLR | WarmupDecayLR | WarmupCosineLR
  float warmup_min_lr = 0.0f;
  float warmup_max_lr = 1e-3f;
  int64_t warmup_num_steps = 1000;
  std::string warmup_type = "log";  // "log" | "linear"
  int64_t total_num_steps = 0;      // WarmupDecayLR, WarmupCosineLR
  float cos_min_ratio = 1e-4f;      // WarmupCosineLR
  float warmup_min_ratio = 0.0f;    // WarmupCosineLR
  // WarmupLR without warmup_max_lr warms up to the optimizer's lr (current DeepSpeed;
  // older releases used 0.001).
  // LrSchedule then uses its base lr instead of warmup_max_lr.
  bool warmup_max_lr_from_optimizer = false;
  // OneCycle (cycle_min_lr and cycle_max_lr are required).
  float cycle_min_lr = 0.0f, cycle_max_lr = 0.0f;
  float decay_lr_rate = 0.0f;
  int64_t cycle_first_step_size = 2000;
  int64_t cycle_second_step_size = 0;   // 0: cycle_first_step_size
  int64_t cycle_first_stair_count = 0;  // accepted; DeepSpeed's OneCycle never reads them
  int64_t cycle_second_stair_count = 0;
  int64_t decay_step_size = 0;  // 0: no decay after the cycle
  bool cycle_momentum = true;   // cycles beta1 (and sets beta2 to 0.99), as DeepSpeed does
  float cycle_min_mom = 0.8f, cycle_max_mom = 0.9f, decay_mom_rate = 0.0f;
  // LRRangeTest
  float lr_range_test_min_lr = 1e-3f;
  int64_t lr_range_test_step_size = 2000;
  float lr_range_test_step_rate = 1.0f;
  bool lr_range_test_staircase = false;
};

struct Fp16Config {
  bool enabled = false;
  float loss_scale = 0.0f;  // 0: dynamic
  int initial_scale_power = 16;
  int loss_scale_window = 1000;
  int hysteresis = 2;
  bool consecutive_hysteresis = false;
  float min_loss_scale = 1.0f;
};

struct OffloadConfig {
  OffloadDevice device = OffloadDevice::none;
  bool pin_memory = false;
  std::string nvme_path;  // required when device is nvme
  // NVMe: host buffers carrying data to and from the swap files (DeepSpeed's
  // buffer_count: 5 for parameters, 4 for the optimizer) and, for parameters,
  // the largest number of elements one buffer holds (buffer_size).
  int buffer_count = 5;
  int64_t buffer_size = 100'000'000;
};

// DeepSpeed's "aio" block: how NVMe swap files are read and written
// (engine/io/async_io.h).
struct AioConfig {
  int64_t block_size = 1'048'576;  // bytes per I/O request; a multiple of 4096
  int queue_depth = 8;             // requests in flight per I/O thread
  int thread_count = 1;            // I/O threads sharing each read or write
  bool single_submit = false;      // submit requests one at a time instead of in batches
  bool overlap_events = true;      // submit new requests while earlier ones complete
};

struct ZeroConfig {
  int stage = 0;
  int64_t reduce_bucket_size = 500'000'000;     // elements, as DeepSpeed counts them
  int64_t allgather_bucket_size = 500'000'000;  // elements
  bool overlap_comm = false;   // DeepSpeed's default is stage-dependent; resolved in parse
  bool reduce_scatter = true;  // false: all-reduce at stages 1–2 (stages 0 and 3 ignore it)
  int64_t stage3_prefetch_bucket_size = 50'000'000;
  int64_t stage3_param_persistence_threshold = 100'000;
  int64_t stage3_max_live_parameters = 1'000'000'000;
  OffloadConfig offload_optimizer = {OffloadDevice::none, false, {}, 4, 100'000'000};
  OffloadConfig offload_param;
};

// DeepSpeed's activation_checkpointing block and our per-block policy
// (hybrid.activation_checkpointing): which GPT-2 blocks keep only their input
// and recompute their forward in backward (engine/model/activation_checkpointing.h).
struct ActivationCheckpointingConfig {
  int every = 0;                   // resolved: 0 off; k >= 1 checkpoints blocks 0, k, 2k, ...
  bool every_given = false;        // hybrid.activation_checkpointing.every was given
  bool cpu_checkpointing = false;  // the kept block inputs live in host memory
  bool synchronize_checkpoint_boundary = false;
  bool profile = false;  // log forward / recompute / backward time of the checkpointed blocks
  bool partition_activations = false;           // read; no effect without model parallelism
  bool contiguous_memory_optimization = false;  // read; activation layouts are contiguous
  int number_checkpoints = 0;                   // 0: not given; else at most this many blocks
};

struct FlopsProfilerConfig {
  bool enabled = false;
  int profile_step = 1;
  int module_depth = -1;
  int top_modules = 1;
  bool detailed = true;
  std::string output_file;  // empty: stdout
};

struct CommsLoggerConfig {
  bool enabled = false;
  bool verbose = false;
  bool prof_all = true;
  std::vector<std::string> prof_ops;
};

// hybrid.checkpoint: when hybrid-train saves, and how many tags it keeps.
struct CheckpointConfig {
  std::string dir;       // default of hybrid-train --save
  int64_t interval = 0;  // full checkpoints (resume state + model.bin) every N steps; 0: none
  int64_t optimizer_interval = 0;  // optimizer-state (resume) checkpoints every N steps; 0: none
  int64_t keep_last = 0;           // newest tags kept per kind; 0: all
};

struct ProfilerConfig {      // hybrid.profiler
  bool trace = false;        // record events of profiled steps into the run store
  int trace_steps = 2;       // how many steps (from flops_profiler.profile_step) keep events
  std::string chrome_trace;  // write a Chrome trace JSON here at the end
};

// DeepSpeed's hybrid_engine block: generation between training steps on the
// same weights (Engine::generate, docs/generation.md).
struct HybridEngineConfig {
  bool enabled = false;
  int max_out_tokens = 512;   // enabled: a sequence's prompt plus new tokens at most
  int inference_tp_size = 1;  // enabled, > 1: generate on a replica resharded this many ways
  // Enabled under ZeRO-3: generate gathers every layer's parameters at once and
  // keeps them for the call (pinned), else a module at a time around its forward.
  bool pin_parameters = true;
  // Enabled: false keeps the key/value cache between generate calls (grown
  // when a call needs more), true releases it after each; without the block
  // it is always released.
  bool release_inference_cache = false;
  // Read, no effect (warned): the replica's weights come whole from
  // gather_parameters, not in partitions.
  int tp_gather_partition_size = 8;
};

// hybrid.rollout: generation inside hybrid-train's loop, after every `every`-th
// step, on the weights being trained (docs/generation.md): each data-parallel
// rank generates from its share of the prompts file (prompt i goes to rank
// i mod ranks) and the step prints DeepSpeed's hybrid-engine breakdown.
struct RolloutConfig {
  int every = 0;  // 0: no rollouts
  std::string
      prompts;  // JSON lines, {"tokens": [...]} or {"text": ...} a line (engine/generate/prompts.h)
  std::string tokenizer;  // for text prompts; "": hybrid.init_from's folder's, if it holds one
  int max_new_tokens = 16;
  SamplingParams sampling;
  int batch = 0;  // rows each rank decodes together (its share in calls of this many); 0: all
  std::optional<kernels::DType> cache_dtype;  // the key/value cache's; unset: the compute dtype
};

// 3D parallelism (docs/parallelism.md): tensor_model_parallel_size and the
// pipeline block. world = pp × dp × tp; the batch triad counts dp ranks.
struct ParallelConfig {
  int tensor = 1;                          // tensor_model_parallel_size
  int pipeline_stages = 1;                 // pipeline.stages
  std::string partition = "parameters";    // pipeline.partition: "parameters" or "uniform"
  int activation_checkpoint_interval = 0;  // pipeline: checkpoint every block of a stage when > 0
  int data_parallel = 1;                   // resolved: world / (tensor · pipeline_stages)
};

struct Config {
  nlohmann::json raw;  // the file as given (stored with each run)

  // Batch triad, resolved: train_batch_size = micro × accumulation × data-parallel ranks.
  int train_batch_size = 0;
  int train_micro_batch_size_per_gpu = 0;
  int gradient_accumulation_steps = 0;

  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  float gradient_clipping = 0.0f;  // 0: off
  int steps_per_print = 10;
  bool wall_clock_breakdown = false;
  Fp16Config fp16;
  bool bf16 = false;
  kernels::DType grad_accum_dtype =
      kernels::DType::f32;  // resolved: param dtype unless data_types.grad_accum_dtype
  bool grad_accum_dtype_set = false;
  ZeroConfig zero;
  AioConfig aio;
  FlopsProfilerConfig flops_profiler;
  CommsLoggerConfig comms_logger;
  ActivationCheckpointingConfig activation_checkpointing;
  ParallelConfig parallel;
  HybridEngineConfig hybrid_engine;

  // "hybrid" block
  ModelConfig model;
  DataConfig data;
  std::string init_from;  // llm.c checkpoint to start from
  Device device = Device::automatic;
  uint64_t memory_budget = 0;  // bytes per rank; 0: unlimited
  uint64_t seed = 1234;
  int threads = 0;  // OpenMP threads per rank; 0: cores / local ranks
  // CPU GEMM provider: "auto" (measured per machine and shape, cached), "onednn",
  // "openblas". The environment's HYBRID_GEMM overrides it (engine/cpu_gemm.h).
  std::string gemm = "auto";
  CheckpointConfig checkpoint;
  ProfilerConfig profiler;
  RolloutConfig rollout;

  std::vector<std::string> ignored_keys;  // dotted paths of keys we do not implement
  // Keys that are accepted but have no effect here (docs/config.md, "Keys accepted
  // with a warning"), one message each naming the key; reported once, as ignored keys.
  std::vector<std::string> warnings;

  kernels::DType param_dtype() const {
    return fp16.enabled ? kernels::DType::f16 : bf16 ? kernels::DType::bf16 : kernels::DType::f32;
  }
  // The training sequence length T (hybrid.data.seq_len, <= the block size).
  int seq_len() const { return data.seq_len > 0 ? data.seq_len : model.seq_len; }
  int padded_vocab() const {
    return model.padded_vocab_size > 0 ? model.padded_vocab_size
                                       : (model.vocab_size + 127) / 128 * 128;
  }
};

// Parses and validates. world_size resolves the batch triad as DeepSpeed does.
Config parse_config(const nlohmann::json& j, int world_size = 1);
Config load_config(const std::string& path, int world_size = 1);  // reads, then parse_config

// Parses sizes such as "8GiB", "512MiB", "1.5GB", 1073741824 (bytes).
uint64_t parse_byte_size(const nlohmann::json& v, const std::string& key);

}  // namespace hybrid::engine
