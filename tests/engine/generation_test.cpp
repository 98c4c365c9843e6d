// Generation with a key/value cache (engine/generate/), on GPT-2 and Llama:
// greedy tokens equal the argmax of a full training-path forward (no cache) at
// every length, for a batch of prompts of different lengths; training before
// and after a generation trains as if it had not happened; a seed repeats its
// samples; ZeRO-3 (its parameters pinned or gathered per module) generates what
// ZeRO-0 does, its gather time the communication tracer's; bad prompts and parameters are
// named errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/engine.h"
#include "engine/model/decoder_stack.h"
#include "engine_test_util.h"
#include "profiler/comm_tracer.h"
#include "tests/common/error_of.h"

namespace hybrid {
namespace {

using engine::GenerationParams;

constexpr int kVocab = 64;

nlohmann::json model_of(const std::string& family) {
  if (family == "gpt2")
    return {{"type", "gpt2"}, {"n_layer", 2},         {"n_embd", 32},
            {"n_head", 2},    {"vocab_size", kVocab}, {"seq_len", 80}};
  return {{"type", "llama"},      {"n_layer", 2},   {"n_embd", 32},
          {"n_head", 4},          {"n_kv_head", 2}, {"intermediate_size", 48},
          {"vocab_size", kVocab}, {"seq_len", 80},  {"tie_embeddings", false}};
}

std::unique_ptr<Engine> engine_for(const std::string& family, int micro_batch,
                                   nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json patch = {{"train_micro_batch_size_per_gpu", micro_batch},
                          {"optimizer", {{"params", {{"lr", 1e-2}}}}},
                          {"hybrid", {{"model", model_of(family)}}}};
  patch.merge_patch(extra);
  const auto cfg = test::tiny_config(patch);
  return initialize(cfg, make_model(cfg), test::quiet());
}

// A bigram rule to learn (x → 5x + 3 mod V), so that the model's next-token
// choices are clear-cut rather than near-ties of a random initialisation.
int rule(int x) { return (5 * x + 3) % kVocab; }

std::vector<float> learn_the_rule(Engine& e, int steps) {
  return test::train_steps(e, steps, [&](int, auto& in, auto& tgt) {
    const int T = e.config().seq_len();
    for (size_t i = 0; i < in.size(); ++i) {
      const size_t row = i / size_t(T), t = i % size_t(T);
      in[i] = t == 0 ? int32_t((row * 13 + size_t(e.global_step()) * 7) % kVocab)
                     : int32_t(rule(in[i - 1]));
      tgt[i] = int32_t(rule(in[i]));
    }
  });
}

// The reference: the training path's forward (no cache) over the prompt and
// the generated tokens, padded to the block (causal attention makes the padding
// invisible). The logits at position p see exactly the tokens up to p, so their
// argmax is what a full forward of that length picks next: one forward checks
// every length. Returns the picks after the prompt's last token on.
std::vector<int> argmax_after_each_prefix(Engine& ref, const std::vector<int>& prompt,
                                          const std::vector<int>& generated) {
  const int T = ref.config().seq_len();
  auto& model = dynamic_cast<engine::DecoderStack&>(ref.model());
  const size_t Vp = size_t(model.padded_vocab());
  std::vector<int32_t> in(size_t(T), 0), tgt(size_t(T), 0);
  std::copy(prompt.begin(), prompt.end(), in.begin());
  std::copy(generated.begin(), generated.end(), in.begin() + long(prompt.size()));
  ref.forward(in, tgt);
  std::vector<int> picks;
  for (size_t p = prompt.size() - 1; p < prompt.size() + generated.size() - 1; ++p) {
    const float* row = static_cast<const float*>(model.lm_head->out) + p * Vp;
    picks.push_back(int(std::max_element(row, row + kVocab) - row));
  }
  return picks;
}

const std::vector<std::vector<int>> kPrompts = {
    {5, 9, 1, 33, 12}, {7}, {60, 2, 2, 2, 2, 2, 2, 2, 40}, {0, 1, 2}};

// The communication tracer's all-gather time so far (its comms-logger rows).
double all_gather_ms(Engine& e) {
  int64_t ns = 0;
  for (const auto& s : e.comm_tracer().stats())
    if (s.kind == profiler::CollectiveKind::all_gather) ns += s.total_ns;
  return double(ns) / 1e6;
}

GenerationParams greedy(int n) {
  GenerationParams p;
  p.max_new_tokens = n;
  return p;
}

TEST(Generation, GreedyWithTheCacheEqualsTheArgmaxOfAFullForwardAtEveryLength) {
  for (const std::string family : {"gpt2", "llama"}) {
    SCOPED_TRACE(family);
    auto e = engine_for(family, 2);
    learn_the_rule(*e, 30);
    const auto got = e->generate(kPrompts, greedy(64));
    auto ref = engine_for(family, 1);
    ref->set_parameters(e->gather_parameters());
    ASSERT_EQ(got.tokens.size(), kPrompts.size());
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      SCOPED_TRACE(i);
      ASSERT_EQ(got.tokens[i].size(), 64u);
      EXPECT_EQ(got.tokens[i], argmax_after_each_prefix(*ref, kPrompts[i], got.tokens[i]));
    }
    EXPECT_EQ(got.new_tokens(), 4 * 64);
    EXPECT_EQ(got.ttft_ms.size(), 4u);
    EXPECT_EQ(got.tpot_ms.size(), 63u);  // the first token comes from the prefill
  }
}

// The bound micro-batch [2, 80] holds the prompts; a batch of more rows than
// its 160 tokens gets buffers of its own meanwhile, and training's come back.
TEST(Generation, TrainGenerateTrainTrainsAsTrainingAlone) {
  auto plain = engine_for("llama", 2);
  const auto alone = learn_the_rule(*plain, 6);
  auto e = engine_for("llama", 2);
  auto losses = learn_the_rule(*e, 3);
  const auto first = e->generate(kPrompts, greedy(8));
  const std::vector<std::vector<int>> many(170, std::vector<int>{3, 4});
  const auto wide = e->generate(many, greedy(2));
  EXPECT_EQ(wide.tokens.size(), 170u);
  for (const auto& t : wide.tokens) EXPECT_EQ(t, wide.tokens[0]);  // the same prompt each row
  const auto again = e->generate(kPrompts, greedy(8));
  EXPECT_EQ(first.tokens, again.tokens);  // nothing trained in between
  const auto after = learn_the_rule(*e, 3);
  losses.insert(losses.end(), after.begin(), after.end());
  ASSERT_EQ(losses.size(), alone.size());
  for (size_t i = 0; i < alone.size(); ++i) EXPECT_EQ(losses[i], alone[i]) << "step " << i;
}

// The same weights generate the same tokens whatever holds them: ZeRO-3
// gathers each module's parameters for each generating forward (and releases
// them), offload keeps them in host memory, checkpointing changes the buffers.
TEST(Generation, ZeroStagesOffloadAndCheckpointingGenerateWhatThePlainRunDoes) {
  auto plain = engine_for("gpt2", 2);
  learn_the_rule(*plain, 10);
  const auto want = plain->generate(kPrompts, greedy(16));
  const nlohmann::json variants[] = {
      {{"zero_optimization", {{"stage", 3}, {"stage3_param_persistence_threshold", 100}}}},
      {{"zero_optimization",
        {{"stage", 3},
         {"offload_optimizer", {{"device", "cpu"}}},
         {"offload_param", {{"device", "cpu"}}}}}},
      {{"activation_checkpointing", {{"cpu_checkpointing", true}}}},
      // hybrid_engine.pin_parameters: every layer gathered once for the call.
      {{"zero_optimization", {{"stage", 3}, {"stage3_param_persistence_threshold", 100}}},
       {"hybrid_engine", {{"enabled", true}}}},
      {{"zero_optimization", {{"stage", 3}, {"offload_param", {{"device", "cpu"}}}}},
       {"hybrid_engine", {{"enabled", true}}}},
  };
  for (const auto& v : variants) {
    SCOPED_TRACE(v.dump());
    auto e = engine_for("gpt2", 2, v);
    e->set_parameters(plain->gather_parameters());
    const double traced_before = all_gather_ms(*e);
    const auto got = e->generate(kPrompts, greedy(16));
    EXPECT_EQ(got.tokens, want.tokens);
    // The call's gather time is the communication tracer's all-gather time during it.
    EXPECT_DOUBLE_EQ(got.gather_ms, all_gather_ms(*e) - traced_before);
    // (On one rank, offload_param's gathers are in place: nothing moves.)
    if (v.contains("zero_optimization") && !v["zero_optimization"].contains("offload_param")) {
      EXPECT_GT(got.gather_ms, 0.0);
    }
    EXPECT_LT(got.gather_ms, got.total_ms);
  }
}

TEST(Generation, ASeedRepeatsItsSamplesAndTopKOfOneIsGreedy) {
  auto e = engine_for("gpt2", 2);
  learn_the_rule(*e, 5);  // still uncertain: sampling has choices to make
  GenerationParams p = greedy(12);
  p.sampling.temperature = 1.5f;
  p.sampling.top_p = 0.9f;
  p.sampling.seed = 42;
  const auto a = e->generate(kPrompts, p);
  const auto b = e->generate(kPrompts, p);
  EXPECT_EQ(a.tokens, b.tokens);
  // A sequence's draws do not depend on the rows after it in the batch.
  const auto fewer = e->generate({kPrompts[0], kPrompts[1]}, p);
  EXPECT_EQ(fewer.tokens[0], a.tokens[0]);
  EXPECT_EQ(fewer.tokens[1], a.tokens[1]);
  p.sampling.seed = 43;
  EXPECT_NE(e->generate(kPrompts, p).tokens, a.tokens);
  p.sampling.top_k = 1;
  EXPECT_EQ(e->generate(kPrompts, p).tokens, e->generate(kPrompts, greedy(12)).tokens);
}

// A traced generate: one prefill phase per prompt and one decode phase per
// step on the profiler's timeline, each holding its forward's module events.
TEST(Generation, PrefillAndDecodeArePhasesAroundTheirForwards) {
  auto e = engine_for("llama", 2);
  learn_the_rule(*e, 2);
  e->tracer().drain();
  e->tracer().set_enabled(true);
  const auto r = e->generate({{1, 2, 3}, {4}}, greedy(4));
  e->tracer().set_enabled(false);
  using profiler::Category;
  std::vector<profiler::Event> phases, forwards;
  for (const auto& ev : e->tracer().drain()) {
    if (ev.category == Category::prefill || ev.category == Category::decode) phases.push_back(ev);
    if (ev.category == Category::forward) forwards.push_back(ev);
  }
  ASSERT_EQ(phases.size(), 2u + 3u) << "a prefill per prompt, then steps for tokens 2 to 4";
  std::sort(phases.begin(), phases.end(),
            [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  for (size_t i = 0; i < phases.size(); ++i)
    EXPECT_EQ(phases[i].category, i < 2 ? Category::prefill : Category::decode) << i;
  EXPECT_EQ(r.tpot_ms.size(), 3u);
  // Every module forward lies inside exactly one phase, and every phase holds some.
  std::vector<int> held(phases.size(), 0);
  for (const auto& f : forwards) {
    int inside = 0;
    for (size_t i = 0; i < phases.size(); ++i)
      if (f.start_ns >= phases[i].start_ns &&
          f.start_ns + f.dur_ns <= phases[i].start_ns + phases[i].dur_ns)
        ++inside, ++held[i];
    EXPECT_EQ(inside, 1) << "module " << f.module_id;
  }
  for (size_t i = 0; i < phases.size(); ++i) EXPECT_GT(held[i], 0) << "phase " << i;
}

TEST(Generation, StopTokensEndARowAndStayInItsTokens) {
  auto e = engine_for("gpt2", 2);
  learn_the_rule(*e, 30);
  const auto full = e->generate({{7}}, greedy(10));
  GenerationParams p = greedy(10);
  p.stop_tokens = {full.tokens[0][3]};
  const auto stopped = e->generate({{7}}, p);
  const auto first_stop = std::find(full.tokens[0].begin(), full.tokens[0].end(), p.stop_tokens[0]);
  EXPECT_EQ(stopped.tokens[0], std::vector<int>(full.tokens[0].begin(), first_stop + 1));
}

TEST(Generation, BadPromptsAndParametersAreNamedErrors) {
  auto e = engine_for("gpt2", 2);
  const auto error = [&](const std::vector<std::vector<int>>& prompts, GenerationParams p) {
    return test::error_of<std::invalid_argument>([&] { e->generate(prompts, p); });
  };
  EXPECT_NE(error({}, greedy(4)).find("no prompts"), std::string::npos);
  EXPECT_NE(error({{1}, {}}, greedy(4)).find("prompt 1 is empty"), std::string::npos);
  EXPECT_NE(error({{1, 64}}, greedy(4)).find("token 64 at position 1 is outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(error({{-1}}, greedy(4)).find("token -1"), std::string::npos);
  EXPECT_NE(error({std::vector<int>(78, 1)}, greedy(4))
                .find("78 tokens plus max_new_tokens 4 exceed the block size 80"),
            std::string::npos);
  EXPECT_NE(error({{1}}, greedy(0)).find("max_new_tokens 0"), std::string::npos);
  GenerationParams p = greedy(4);
  p.sampling.temperature = -0.5f;
  EXPECT_NE(error({{1}}, p).find("temperature -0.5 must be"), std::string::npos);
  p = greedy(4);
  p.sampling.top_p = 0.0f;
  EXPECT_NE(error({{1}}, p).find("top_p 0 must be in (0, 1]"), std::string::npos);
  p.sampling.top_p = 1.5f;
  EXPECT_NE(error({{1}}, p).find("top_p 1.5"), std::string::npos);
  p = greedy(4);
  p.stop_tokens = {99};
  EXPECT_NE(error({{1}}, p).find("stop token 99"), std::string::npos);
  // DeepSpeed's hybrid_engine block bounds a sequence, prompt included.
  auto bounded =
      engine_for("gpt2", 2, {{"hybrid_engine", {{"enabled", true}, {"max_out_tokens", 20}}}});
  EXPECT_NE(
      test::error_of<std::invalid_argument>([&] {
        bounded->generate({{1, 2, 3, 4, 5}}, greedy(16));
      }).find("prompt 0: 5 tokens plus max_new_tokens 16 exceed hybrid_engine.max_out_tokens 20"),
      std::string::npos);
  EXPECT_EQ(bounded->generate({{1, 2, 3, 4, 5}}, greedy(15)).tokens[0].size(), 15u);
  // Nothing was disturbed: it still trains and generates.
  EXPECT_EQ(e->generate({{1, 2}}, greedy(3)).tokens[0].size(), 3u);
  EXPECT_EQ(learn_the_rule(*e, 1).size(), 1u);
}

}  // namespace
}  // namespace hybrid
