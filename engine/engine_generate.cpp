// Engine::generate: the generator (engine/generate/) on the training engine's
// model, context and parameters, between optimizer steps.
#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <memory>

#include "engine/engine.h"
#include "engine/inference_replica.h"
#include "profiler/comm_tracer.h"

namespace hybrid {

using namespace engine;

namespace {

// ZeRO-3's ranks gather every module's parameters together (and tensor-parallel
// ones reduce every layer's outputs together), so they run every forward together: they refuse a
// call together (one rank's refusal is every rank's) and need as many prompts each.
std::string refusal_of_all(Engine& e, std::string mine, size_t prompts) {
  if (e.mean_over_ranks(mine.empty() ? 0.0 : 1.0) > 0 && mine.empty())
    return "generate under ZeRO-3: another rank's prompts or parameters were refused";
  if (!mine.empty()) return mine;
  const double n = double(prompts), mean = e.mean_over_ranks(n);
  if (e.mean_over_ranks(std::abs(n - mean)) > 0)
    return fmt::format(
        "generate under ZeRO-3: every rank needs as many prompts (this rank has {}, the mean over "
        "the ranks is {})",
        prompts, mean);
  return "";
}

// hybrid_engine.max_out_tokens: DeepSpeed's bound on a sequence, prompt included.
std::string past_max_out_tokens(const std::vector<std::vector<int>>& prompts, int max_new_tokens,
                                int max_out_tokens) {
  for (size_t i = 0; i < prompts.size(); ++i)
    if (int64_t(prompts[i].size()) + max_new_tokens > max_out_tokens)
      return fmt::format(
          "prompt {}: {} tokens plus max_new_tokens {} exceed hybrid_engine.max_out_tokens {}", i,
          prompts[i].size(), max_new_tokens, max_out_tokens);
  return "";
}

// The communication tracer's all-gather time so far (its comms-logger totals).
double all_gather_ms(const profiler::CommTracer& tracer) {
  int64_t ns = 0;
  for (const auto& s : tracer.stats())
    if (s.kind == profiler::CollectiveKind::all_gather) ns += s.total_ns;
  return double(ns) / 1e6;
}

// hybrid_engine.pin_parameters under ZeRO-3: every layer gathered at once for
// the whole call (DeepSpeed's gather_all_layers), released however it ends.
struct PinnedParameters {
  ParamGatherer* gatherer;
  explicit PinnedParameters(ParamGatherer* g) : gatherer(g) {
    if (gatherer) gatherer->pin_all();
  }
  ~PinnedParameters() {
    if (gatherer) gatherer->unpin_all();
  }
};

}  // namespace

std::string Engine::generation_refusal(const std::vector<std::vector<int>>& prompts,
                                       const GenerationParams& params) const {
  std::string refused = generation_error(prompts, params, cfg_.model);
  if (refused.empty() && cfg_.hybrid_engine.enabled)
    refused =
        past_max_out_tokens(prompts, params.max_new_tokens, cfg_.hybrid_engine.max_out_tokens);
  return refused;
}

GenerationResult Engine::generate(const std::vector<std::vector<int>>& prompts,
                                  const GenerationParams& params) {
  if (micro_step_ != 0)
    throw std::logic_error("generate: between optimizer steps, not inside an accumulation");
  // Tensor-parallel peers run every forward's collectives together too (and
  // get the same prompts, as they get the same batch in training); so do the
  // ranks of a resharded replica (hybrid_engine.inference_tp_size).
  const bool reshard = cfg_.hybrid_engine.enabled && cfg_.hybrid_engine.inference_tp_size > 1;
  const bool together =
      (cfg_.zero.stage == 3 || cfg_.parallel.tensor > 1 || reshard) && world_size() > 1;
  std::string refused = generation_refusal(prompts, params);
  if (together) refused = refusal_of_all(*this, refused, prompts.size());
  if (!refused.empty()) throw std::invalid_argument(refused);
  const auto t0 = std::chrono::steady_clock::now();
  const double gathered_before = all_gather_ms(comm_tracer());
  if (reshard && !inference_) inference_ = std::make_unique<InferenceReplica>(*this);
  GenerationResult r = reshard ? inference_->generate(prompts, params)
                               : generate_on_bound_model(prompts, params, together);
  r.total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.gather_ms = all_gather_ms(comm_tracer()) - gathered_before;
  return r;
}

GenerationResult Engine::generate_on_bound_model(const std::vector<std::vector<int>>& prompts,
                                                 const GenerationParams& params, bool together) {
  const int B = cfg_.train_micro_batch_size_per_gpu, T = cfg_.seq_len();
  // Prompts the training buffers cannot hold get buffers of their own meanwhile.
  const bool rebind = !Generator::fits(*model_, prompts);
  if (rebind) {
    const auto [rows, tokens] = Generator::shape_for(prompts);
    bind_activations(rows, tokens);
  }
  try {
    const bool pin = cfg_.hybrid_engine.enabled && cfg_.hybrid_engine.pin_parameters;
    PinnedParameters pinned(pin ? zero_->gatherer() : nullptr);
    GenerationHooks hooks;
    hooks.after_forward = [this] { zero_->end_forward(); };
    hooks.tracer = &tracer();
    if (!decode_threads_) decode_threads_ = std::make_unique<DecodeThreads>(omp_get_max_threads());
    hooks.threads = decode_threads_.get();
    if (together)
      hooks.any_rank_running = [this](bool mine) { return mean_over_ranks(mine ? 1 : 0) > 0; };
    const auto& he = cfg_.hybrid_engine;
    Generator gen(*model_, *ctx_, allocator(), std::move(hooks),
                  he.enabled && !he.release_inference_cache ? &kept_cache_ : nullptr);
    GenerationResult r = gen.generate(prompts, params);
    if (rebind) bind_activations(B, T);
    return r;
  } catch (...) {
    if (rebind) bind_activations(B, T);
    throw;
  }
}

}  // namespace hybrid
