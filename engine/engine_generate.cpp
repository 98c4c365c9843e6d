// Engine::generate: the generator (engine/generate/) on the training engine's
// model, context and parameters, between optimizer steps.
#include <fmt/format.h>

#include <cmath>

#include "engine/engine.h"

namespace hybrid {

using namespace engine;

namespace {

// ZeRO-3's ranks gather every module's parameters together, so they run every
// forward together: they refuse a call together (one rank's refusal is every
// rank's) and need as many prompts each.
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

}  // namespace

GenerationResult Engine::generate(const std::vector<std::vector<int>>& prompts,
                                  const GenerationParams& params) {
  if (micro_step_ != 0)
    throw std::logic_error("generate: between optimizer steps, not inside an accumulation");
  const bool together = cfg_.zero.stage == 3 && world_size() > 1;
  std::string refused = generation_error(prompts, params, cfg_.model);
  if (refused.empty() && cfg_.hybrid_engine.enabled)
    refused =
        past_max_out_tokens(prompts, params.max_new_tokens, cfg_.hybrid_engine.max_out_tokens);
  if (together) refused = refusal_of_all(*this, refused, prompts.size());
  if (!refused.empty()) throw std::invalid_argument(refused);
  const int B = cfg_.train_micro_batch_size_per_gpu, T = cfg_.seq_len();
  // Prompts the training buffers cannot hold get buffers of their own meanwhile.
  const bool rebind = !Generator::fits(*model_, prompts);
  if (rebind) {
    const auto [rows, tokens] = Generator::shape_for(prompts);
    bind_activations(rows, tokens);
  }
  try {
    GenerationHooks hooks;
    hooks.after_forward = [this] { zero_->end_forward(); };
    if (together)
      hooks.any_rank_running = [this](bool mine) { return mean_over_ranks(mine ? 1 : 0) > 0; };
    Generator gen(*model_, *ctx_, allocator(), std::move(hooks));
    GenerationResult r = gen.generate(prompts, params);
    if (rebind) bind_activations(B, T);
    return r;
  } catch (...) {
    if (rebind) bind_activations(B, T);
    throw;
  }
}

}  // namespace hybrid
