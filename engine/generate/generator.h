// Generation with a key/value cache over a bound CausalLM: each prompt is
// prefilled on its own (one row of its length), then every row decodes one
// token per step together, each at its own position. The model's activation
// buffers serve at the generating shape (a row of the longest prompt, or the
// batch's rows of one token), so the batch's rows times the longest prompt
// must fit the bound micro-batch; the cache is this generator's own memory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/generate/decode_threads.h"
#include "engine/generate/sampling.h"
#include "engine/memory/layout_buffers.h"
#include "engine/model/causal_lm.h"
#include "engine/model/execution_context.h"
#include "profiler/tracer.h"

namespace hybrid::engine {

struct GenerationParams {
  int max_new_tokens = 16;
  SamplingParams sampling;
  std::vector<int> stop_tokens;  // a row ends after it produces one (kept in its tokens)
  // Per prompt: the index its sampler is seeded from (TokenSampler); empty: its
  // index in the call. Keeps a prompt's draws when prompts are batched anew.
  std::vector<int> sequence_ids;
  // The key/value cache's dtype; unset: the compute dtype. Any pairing works
  // (an fp32 model with a bf16 cache halves the cache's bytes).
  std::optional<kernels::DType> cache_dtype;
};

struct GenerationResult {
  std::vector<std::vector<int>> tokens;  // per prompt: the new tokens
  std::vector<double> ttft_ms;           // per prompt: from the call's start to its first token
  std::vector<double> tpot_ms;           // per decode step: its time (every row got a token)
  std::vector<int> decode_threads;       // per decode step: the threads it ran on
  double total_ms = 0;
  double gather_ms = 0;  // Engine::generate: parameter all-gathers (ZeRO-3) during the call
  int64_t new_tokens() const;
};

// Why the prompts cannot be generated from with `p` on `model` ("" when they
// can): an empty batch or prompt, a token id outside the vocabulary, a prompt
// plus max_new_tokens past the block size, bad sampling, naming the prompt.
std::string generation_error(const std::vector<std::vector<int>>& prompts,
                             const GenerationParams& p, const ModelConfig& model);

// What a generator runs around its forwards (Engine::generate sets them).
struct GenerationHooks {
  std::function<void()> after_forward;  // ZeRO-3 releases what it gathered
  // Ranks that gather parameters together (ZeRO-3) run every forward together:
  // given whether this rank has rows left to decode, whether any rank has.
  std::function<bool(bool)> any_rank_running;
  // Where each prefill and decode step is recorded as a phase (Category
  // prefill/decode), around the modules' own events, when it is enabled.
  profiler::Tracer* tracer = nullptr;
  // The decode steps' thread choice, kept from call to call (the Engine's: a
  // call of a few tokens would otherwise spend them re-measuring); used when
  // it chooses among this call's threads, else the call makes its own.
  DecodeThreads* threads = nullptr;
};

// A key/value cache kept from one generate call to the next (DeepSpeed's
// hybrid_engine.release_inference_cache false): reused while it holds a call's
// rows and tokens in its dtype, replaced by one holding both otherwise.
struct KeptCache {
  LayoutBuffers buffers;
  int rows = 0, max_tokens = 0;
  kernels::DType dtype = kernels::DType::f32;
};

class Generator {
 public:
  // ctx: the model's context (its parameter access and hooks); its shape and
  // decoding are restored when generate returns. alloc: where the cache goes.
  // kept: the cache to reuse and leave allocated; null: one per call, released
  // when the call returns.
  Generator(CausalLM& model, ExecutionContext& ctx, TrackingAllocator& alloc,
            GenerationHooks hooks = {}, KeptCache* kept = nullptr);
  // Throws std::invalid_argument with generation_error's text.
  GenerationResult generate(const std::vector<std::vector<int>>& prompts,
                            const GenerationParams& p);
  // The micro-batch shape [rows, tokens] whose buffers hold every generating
  // forward of these prompts, and whether the model's bound shape does.
  static std::pair<int, int> shape_for(const std::vector<std::vector<int>>& prompts);
  static bool fits(const CausalLM& model, const std::vector<std::vector<int>>& prompts);

 private:
  struct Rows;
  void check(const std::vector<std::vector<int>>& prompts, const GenerationParams& p) const;
  void open_cache(const std::vector<std::vector<int>>& prompts, const GenerationParams& p);
  void close_cache();
  // The cache of `rows` rows of `max_tokens`, positions for `positions` tokens.
  MemoryLayout cache_layout(int rows, int max_tokens, size_t positions, kernels::DType dt) const;
  void prefill(Rows& rows);
  void decode(Rows& rows);
  // One generating forward over rows [first_row, first_row + B) of T tokens
  // each, at positions start[b]..; returns each row's last logits, fp32 [B, V].
  const std::vector<float>& step(const int32_t* tokens, const std::vector<int>& start,
                                 int first_row, int T);
  // The head's logits [B, Vp] on the device, whole under tensor parallelism.
  const void* whole_logits(int B);

  CausalLM& model_;
  ExecutionContext& ctx_;
  TrackingAllocator& alloc_;
  GenerationHooks hooks_;
  KeptCache* kept_;
  LayoutBuffers own_cache_;
  LayoutBuffers* cache_ = nullptr;  // own_cache_ or kept_->buffers
  int max_tokens_ = 0;
  kernels::DType cache_dtype_ = kernels::DType::f32;
  std::vector<int32_t> positions_;
  std::vector<float> logits_;
  std::vector<char> raw_logits_;
};

}  // namespace hybrid::engine
