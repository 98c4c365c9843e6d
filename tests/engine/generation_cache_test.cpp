// The key/value cache as its own memory category and with its own dtype: the
// memory model's prediction of a generate call's cache equals the tracking
// allocator's kv_cache peak during the call (GPT-2, Llama with grouped-query
// attention; each cache dtype), and an fp32 model keeping a bf16 cache gives
// logits close to the fp32 cache's and the same greedy tokens, in the engine
// and through hybrid-generate --cache-dtype; reports list the cache only where
// a run held one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/model/decoder_stack.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::GenerationParams;
using engine::MemCategory;
using kernels::DType;

constexpr int kVocab = 64;

nlohmann::json model_of(const std::string& family) {
  if (family == "gpt2")
    return {{"type", "gpt2"}, {"n_layer", 3},         {"n_embd", 32},
            {"n_head", 2},    {"vocab_size", kVocab}, {"seq_len", 80}};
  return {{"type", "llama"},      {"n_layer", 2},   {"n_embd", 48},
          {"n_head", 6},          {"n_kv_head", 2}, {"intermediate_size", 64},
          {"vocab_size", kVocab}, {"seq_len", 80},  {"tie_embeddings", false}};
}

std::unique_ptr<Engine> engine_for(const std::string& family, const std::string& dtype = "fp32") {
  nlohmann::json patch = {{"train_micro_batch_size_per_gpu", 2},
                          {"optimizer", {{"params", {{"lr", 1e-2}}}}},
                          {"hybrid", {{"model", model_of(family)}}}};
  if (dtype == "bf16") patch["bf16"] = {{"enabled", true}};
  const auto cfg = test::tiny_config(patch);
  return initialize(cfg, make_model(cfg), test::quiet());
}

// A bigram rule to learn (x → 5x + 3 mod V), so that greedy choices are
// clear-cut rather than near-ties of a random initialisation.
void learn_the_rule(Engine& e, int steps) {
  test::train_steps(e, steps, [&](int, auto& in, auto& tgt) {
    const int T = e.config().seq_len();
    for (size_t i = 0; i < in.size(); ++i) {
      const size_t row = i / size_t(T), t = i % size_t(T);
      in[i] = t == 0 ? int32_t((row * 13 + size_t(e.global_step()) * 7) % kVocab)
                     : int32_t((5 * in[i - 1] + 3) % kVocab);
      tgt[i] = int32_t((5 * in[i] + 3) % kVocab);
    }
  });
}

const std::vector<std::vector<int>> kPrompts = {
    {5, 9, 1, 33, 12}, {7}, {60, 2, 2, 2, 2, 2, 2, 2, 40}, {0, 1, 2}};

GenerationParams greedy(int n, std::optional<DType> cache = std::nullopt) {
  GenerationParams p;
  p.max_new_tokens = n;
  p.cache_dtype = cache;
  return p;
}

uint64_t kv_cache_peak_of_a_call(Engine& e, const std::vector<std::vector<int>>& prompts,
                                 const GenerationParams& p) {
  e.allocator().reset_peaks();
  e.generate(prompts, p);
  const auto s = e.allocator().stats();
  EXPECT_EQ(s.current[size_t(MemCategory::kv_cache)], 0u) << "the cache outlived its call";
  return s.peak[size_t(MemCategory::kv_cache)];
}

TEST(GenerationCache, TheMemoryModelPredictsTheCacheExactly) {
  for (const std::string family : {"gpt2", "llama"})
    for (const std::string dtype : {"fp32", "bf16"}) {
      auto e = engine_for(family, dtype);
      EXPECT_EQ(e->allocator().stats().peak[size_t(MemCategory::kv_cache)], 0u);
      for (const auto cache : {DType::f32, DType::bf16, DType::f16})
        for (const int new_tokens : {1, 17}) {
          SCOPED_TRACE(family + " " + dtype + " cache " + std::string(kernels::dtype_name(cache)) +
                       " new tokens " + std::to_string(new_tokens));
          engine::GenerationShape shape;
          shape.rows = int(kPrompts.size());
          shape.max_tokens = 9 + new_tokens;  // the longest prompt has 9
          shape.cache_dtype = cache;
          const uint64_t predicted = engine::predict_kv_cache(e->config().model, shape);
          // The formula by hand for one case, so the two cannot share a mistake.
          if (family == "llama" && cache == DType::bf16 && new_tokens == 17) {
            EXPECT_EQ(predicted, 2u * 2 * 4 * 2 * 26 * 8 * 2);
          }
          EXPECT_EQ(kv_cache_peak_of_a_call(*e, kPrompts, greedy(new_tokens, cache)), predicted);
        }
    }
}

// hybrid_engine.release_inference_cache false (DeepSpeed's default): the cache
// stays allocated after a call, the memory model's size for the largest call
// so far; a call it holds reuses it, a larger one replaces it; true releases
// it. The tokens are those of a cache per call.
TEST(GenerationCache, TheHybridEngineBlockKeepsTheCacheBetweenCallsUnlessReleased) {
  auto plain = engine_for("llama");
  learn_the_rule(*plain, 4);
  const auto weights = plain->gather_parameters();
  const auto kept_engine = [&](bool release) {
    nlohmann::json patch = {
        {"train_micro_batch_size_per_gpu", 2},
        {"hybrid", {{"model", model_of("llama")}}},
        {"hybrid_engine", {{"enabled", true}, {"release_inference_cache", release}}}};
    const auto cfg = test::tiny_config(patch);
    auto e = initialize(cfg, make_model(cfg), test::quiet());
    e->set_parameters(weights);
    return e;
  };
  const auto held = [](Engine& e) {
    return e.allocator().stats().current[size_t(MemCategory::kv_cache)];
  };
  const auto cache_of = [&](int rows, int max_tokens) {
    engine::GenerationShape shape;
    shape.rows = rows;
    shape.max_tokens = max_tokens;
    return engine::predict_kv_cache(plain->config().model, shape);
  };
  auto kept = kept_engine(false), released = kept_engine(true);
  const std::vector<std::vector<int>> two = {kPrompts[0], kPrompts[1]};
  EXPECT_EQ(kept->generate(kPrompts, greedy(8)).tokens,
            plain->generate(kPrompts, greedy(8)).tokens);
  EXPECT_EQ(held(*kept), cache_of(4, 9 + 8));
  // A smaller call reuses it (rows of 17 positions, this call's 5 + 6 fit).
  kept->allocator().reset_peaks();
  EXPECT_EQ(kept->generate(two, greedy(6)).tokens, plain->generate(two, greedy(6)).tokens);
  EXPECT_EQ(held(*kept), cache_of(4, 17));
  EXPECT_EQ(kept->allocator().stats().peak[size_t(MemCategory::kv_cache)], cache_of(4, 17))
      << "no second cache beside the kept one";
  // A longer call replaces it with one holding both.
  EXPECT_EQ(kept->generate(two, greedy(20)).tokens, plain->generate(two, greedy(20)).tokens);
  EXPECT_EQ(held(*kept), cache_of(4, 5 + 20));
  EXPECT_EQ(released->generate(kPrompts, greedy(8)).tokens,
            plain->generate(kPrompts, greedy(8)).tokens);
  EXPECT_EQ(held(*released), 0u);
  // Training goes on beside the kept cache.
  learn_the_rule(*kept, 1);
  EXPECT_EQ(held(*kept), cache_of(4, 25));
}

// The last decode step's logits of every row, fp32 [rows, V].
std::vector<float> last_logits(Engine& e, int rows) {
  auto& model = dynamic_cast<engine::DecoderStack&>(e.model());
  const auto* out = static_cast<const float*>(model.generated_logits());
  std::vector<float> v;
  for (int b = 0; b < rows; ++b)
    v.insert(v.end(), out + size_t(b) * size_t(model.padded_vocab()),
             out + size_t(b) * size_t(model.padded_vocab()) + kVocab);
  return v;
}

TEST(GenerationCache, AnFp32ModelWithABf16CacheStaysCloseToTheFp32Cache) {
  for (const std::string family : {"gpt2", "llama"}) {
    auto e = engine_for(family);
    learn_the_rule(*e, 30);
    for (const int new_tokens : {1, 8, 40}) {
      SCOPED_TRACE(family + " new tokens " + std::to_string(new_tokens));
      const auto f32 = e->generate(kPrompts, greedy(new_tokens, DType::f32));
      const auto want = last_logits(*e, int(kPrompts.size()));
      const auto b16 = e->generate(kPrompts, greedy(new_tokens, DType::bf16));
      const auto got = last_logits(*e, int(kPrompts.size()));
      // The cached keys and values are rounded to 8 mantissa bits (2^-9
      // relative); the logits move by about that much (measured: at most
      // 4e-4 of the largest logit), well under the gaps between a trained
      // model's greedy choices.
      double diff = 0, scale = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        diff = std::max(diff, double(std::abs(got[i] - want[i])));
        scale = std::max(scale, double(std::abs(want[i])));
      }
      EXPECT_LT(diff, 2e-3 * scale) << "largest logit " << scale;
      EXPECT_GT(diff, 0.0) << "the bf16 cache was not used";
      EXPECT_EQ(b16.tokens, f32.tokens);
    }
  }
}

TEST(GenerationCache, ABf16ModelCanKeepAnFp32Cache) {
  auto e = engine_for("llama", "bf16");
  learn_the_rule(*e, 30);
  const auto b16 = e->generate(kPrompts, greedy(16));
  const auto f32 = e->generate(kPrompts, greedy(16, DType::f32));
  ASSERT_EQ(f32.tokens.size(), kPrompts.size());
  for (const auto& t : f32.tokens) EXPECT_EQ(t.size(), 16u);
  EXPECT_EQ(f32.tokens, b16.tokens);
}

TEST(GenerationCache, TheToolKeepsTheCacheInTheAskedDtype) {
  test::TempDir dir;
  auto e = engine_for("gpt2");
  learn_the_rule(*e, 30);
  const std::string model = dir / "model.bin", out = dir / "out.json";
  e->model().write_weights(e->module_tree(), e->gather_parameters(), {model, ""});
  const auto want = e->generate({{5, 9, 1}, {7}}, greedy(6, DType::bf16));
  const std::string args = " --model " + model + " --prompt-tokens 5,9,1 --prompt-tokens 7" +
                           " --max-new-tokens 6 --json " + out;
  const auto bad = test::run_command(test::tool("hybrid-generate") + args + " --cache-dtype fp8");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--cache-dtype"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto r = test::run_command(test::tool("hybrid-generate") + args + " --cache-dtype bf16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = test::read_json(out);
  ASSERT_EQ(j["sequences"].size(), 2u);
  EXPECT_EQ(j["sequences"][0]["tokens"].get<std::vector<int>>(), want.tokens[0]);
  EXPECT_EQ(j["sequences"][1]["tokens"].get<std::vector<int>>(), want.tokens[1]);
}

// Training runs hold no cache: their predictions' JSON (stored with each run)
// and lines list no kv_cache, as before the category existed.
TEST(GenerationCache, ReportsListTheCacheOnlyWhereThereIsOne) {
  engine::MemoryPrediction p;
  p.bytes[size_t(MemCategory::params)] = 1024;
  EXPECT_FALSE(p.to_json().contains("kv_cache")) << p.to_json().dump();
  EXPECT_TRUE(p.to_json().contains("other")) << "training's categories stay listed at zero";
  EXPECT_EQ(p.to_string().find("kv_cache"), std::string::npos);
  p.bytes[size_t(MemCategory::kv_cache)] = 2048;
  EXPECT_EQ(p.to_json()["kv_cache"], 2048);
  EXPECT_NE(p.to_string().find("kv_cache 2.00 KiB"), std::string::npos) << p.to_string();
}

}  // namespace
}  // namespace hybrid
