// Greedy generation equals transformers' generate on the same Hugging Face
// directories: a tiny LlamaForCausalLM and a tiny GPT2LMHeadModel, trained in
// PyTorch so that their choices are clear-cut, and the tokens transformers
// 4.36.2 (torch 1.13) generated from them, one prompt at a time, written by
// bench/peers/hf_generate_fixture.py into tests/engine/data/generate/. The
// Llama's generation config ends a sequence at token 2 (its eos_token_id): the
// stop token does the same here.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

const std::string kFixtures = std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/generate";

std::unique_ptr<Engine> engine_from(const std::string& dir) {
  const auto cfg = engine::parse_config(
      {{"train_micro_batch_size_per_gpu", 1}, {"hybrid", {{"init_from", dir}}}});
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  e->set_parameters(e->model().read_weights(dir, e->module_tree()));
  return e;
}

TEST(HfGenerate, GreedyTokensEqualTransformersGenerateOnTheSameDirectory) {
  const auto expected = test::read_json(kFixtures + "/expected.json");
  ASSERT_EQ(expected["transformers"], "4.36.2");
  const auto prompts = expected["prompts"].get<std::vector<std::vector<int>>>();
  for (const std::string family : {"llama", "gpt2"}) {
    SCOPED_TRACE(family);
    auto e = engine_from(kFixtures + "/" + family);
    EXPECT_EQ(e->config().model.type, family);
    engine::GenerationParams p;
    p.max_new_tokens = expected["max_new_tokens"].get<int>();
    if (family == "llama") p.stop_tokens = {2};
    const auto got = e->generate(prompts, p);
    const auto want = expected[family].get<std::vector<std::vector<int>>>();
    ASSERT_EQ(got.tokens.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.tokens[i], want[i]) << "prompt " << i;
  }
}

}  // namespace
}  // namespace hybrid
