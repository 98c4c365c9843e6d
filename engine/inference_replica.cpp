#include "engine/inference_replica.h"

#include <cstring>
#include <numeric>
#include <stdexcept>

#include "engine/comm/borrowed_communicator.h"
#include "engine/engine.h"
#include "kernels/cpu/gemm_provider.h"

namespace hybrid {

using engine::GenerationParams;
using engine::GenerationResult;
using Prompts = std::vector<std::vector<int>>;

namespace {

// Every group rank's `mine` (any count each), concatenated in group-rank
// order; *from: where this rank's begin. Integers travel as 4-byte words.
std::vector<int32_t> all_gather_ints(engine::comm::Communicator& g,
                                     const std::vector<int32_t>& mine, size_t* from = nullptr) {
  const size_t n = size_t(g.world_size());
  const int32_t count = int32_t(mine.size());
  std::vector<int32_t> counts(n);
  g.all_gather(&count, counts.data(), std::vector<size_t>(n, 1), kernels::DType::f32);
  const std::vector<size_t> sizes(counts.begin(), counts.end());
  std::vector<int32_t> all(std::accumulate(sizes.begin(), sizes.end(), size_t(0)));
  g.all_gather(mine.data(), all.data(), sizes, kernels::DType::f32);
  if (from) *from = std::accumulate(sizes.begin(), sizes.begin() + g.rank(), size_t(0));
  return all;
}

int32_t bits_of(float f) {
  int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// What a group generates with, which its ranks must agree on: the rows of one
// batch share max_new_tokens, sampling, stop tokens and the cache's dtype.
std::vector<int32_t> fingerprint(const GenerationParams& p) {
  uint32_t stops = 2166136261u;  // FNV-1a over the stop tokens
  for (int s : p.stop_tokens) stops = (stops ^ uint32_t(s)) * 16777619u;
  return {p.max_new_tokens,
          bits_of(p.sampling.temperature),
          p.sampling.top_k,
          bits_of(p.sampling.top_p),
          int32_t(uint32_t(p.sampling.seed)),
          int32_t(uint32_t(p.sampling.seed >> 32)),
          int32_t(stops),
          p.cache_dtype ? int32_t(*p.cache_dtype) : -1};
}

// The group's prompts and each one's sampler index; *mine_from: where this
// rank's rows begin.
Prompts group_prompts(engine::comm::Communicator& g, const Prompts& mine, const GenerationParams& p,
                      std::vector<int>& ids, size_t* mine_from) {
  std::vector<int32_t> shape, tokens;  // (length, sampler index) a prompt; its tokens
  for (size_t i = 0; i < mine.size(); ++i) {
    shape.push_back(int32_t(mine[i].size()));
    shape.push_back(p.sequence_ids.empty() ? int32_t(i) : p.sequence_ids[i]);
    tokens.insert(tokens.end(), mine[i].begin(), mine[i].end());
  }
  const auto shapes = all_gather_ints(g, shape, mine_from);
  *mine_from /= 2;
  const auto all_tokens = all_gather_ints(g, tokens);
  Prompts all;
  ids.clear();
  size_t at = 0;
  for (size_t i = 0; i + 1 < shapes.size(); i += 2) {
    all.emplace_back(all_tokens.begin() + long(at), all_tokens.begin() + long(at + shapes[i]));
    ids.push_back(shapes[i + 1]);
    at += size_t(shapes[i]);
  }
  return all;
}

}  // namespace

engine::Config InferenceReplica::config_for(const engine::Config& trainer, int world_size) {
  engine::Config c = trainer;
  const int k = trainer.hybrid_engine.inference_tp_size;
  c.parallel = engine::ParallelConfig{};
  c.parallel.tensor = k;
  c.parallel.data_parallel = world_size / k;
  c.hybrid_engine.inference_tp_size = 1;
  // One row of training shape: generate binds the shapes it needs.
  c.train_micro_batch_size_per_gpu = 1;
  c.gradient_accumulation_steps = 1;
  c.train_batch_size = c.parallel.data_parallel;
  c.zero = engine::ZeroConfig{};
  c.optimizer = engine::OptimizerConfig{};
  c.optimizer.type = "SGD";  // without momentum: no optimizer state
  c.scheduler = engine::SchedulerConfig{};
  c.activation_checkpointing = engine::ActivationCheckpointingConfig{};
  c.flops_profiler = engine::FlopsProfilerConfig{};
  c.wall_clock_breakdown = false;
  c.checkpoint = engine::CheckpointConfig{};
  c.rollout = engine::RolloutConfig{};
  c.init_from.clear();
  return c;
}

InferenceReplica::InferenceReplica(Engine& trainer) : trainer_(trainer) {
  const engine::Config cfg = config_for(trainer.config(), trainer.world_size());
  EngineOptions o;
  o.quiet = true;
  o.communicator =
      std::make_unique<engine::comm::BorrowedCommunicator>(trainer.host_communicator());
  // The replica's CPU GEMM set-up routes its own shapes; the trainer's stay.
  const auto trainer_routes = kernels::cpu::gemm_routes();
  replica_ = initialize(cfg, make_model(cfg), std::move(o));
  kernels::cpu::restore_gemm_routes(trainer_routes);
  group_ = trainer.host_communicator().split(replica_->data_parallel_rank(),
                                             replica_->tensor_parallel_rank());
}

InferenceReplica::~InferenceReplica() = default;

GenerationResult InferenceReplica::generate(const Prompts& prompts,
                                            const GenerationParams& params) {
  const auto fp = fingerprint(params), all_fp = all_gather_ints(*group_, fp);
  bool same = true;
  for (size_t i = 0; i < all_fp.size(); ++i) same = same && all_fp[i] == fp[i % fp.size()];
  if (trainer_.mean_over_ranks(same ? 0.0 : 1.0) > 0)
    throw std::invalid_argument(
        "generate with hybrid_engine.inference_tp_size: the ranks of an inference group batch "
        "their prompts together, so they need the same max_new_tokens, sampling, stop tokens and "
        "cache dtype");
  size_t mine_from = 0;
  GenerationParams p = params;
  const Prompts all = group_prompts(*group_, prompts, params, p.sequence_ids, &mine_from);
  replica_->set_parameters(trainer_.gather_parameters());  // the gather: current weights
  GenerationResult r = replica_->generate(all, p);
  GenerationResult mine;
  const auto rows = [&](const auto& v) {
    return std::vector(v.begin() + long(mine_from), v.begin() + long(mine_from + prompts.size()));
  };
  mine.tokens = rows(r.tokens);
  mine.ttft_ms = rows(r.ttft_ms);
  mine.tpot_ms = std::move(r.tpot_ms);
  return mine;
}

}  // namespace hybrid
