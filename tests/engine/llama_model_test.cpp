// The Llama family: its config.json maps to hybrid.model and back (the
// variants we do not run refused naming the key), its weights round trip
// through a Hugging Face directory bitwise (q/k/v and gate/up stacked as an
// independent split says), and a small random Llama (4 heads, 2 kv heads,
// untied, vocabulary 256) written as such a directory trains, per step, as
// transformers 4.36.2 trains it (10 AdamW steps) on 1 rank, on 2 ranks with
// ZeRO-3, with tp=2 and with pp=2.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/data/data_file_error.h"
#include "engine/data/safetensors.h"
#include "engine/data/token_shard.h"
#include "engine/engine.h"
#include "engine/model/hf_directory.h"
#include "engine/model/llama/llama.h"
#include "engine/model/llama/llama_config.h"
#include "engine/model/llama/llama_hf.h"
#include "engine/model/registry.h"
#include "engine_test_util.h"

namespace hybrid::engine {
namespace {

// The reference Llama: L 2, C 64, 4 heads of 16, 2 kv heads, MLP 128, V 256,
// T 32, untied.
const nlohmann::json kReferenceModel = {
    {"type", "llama"},   {"n_layer", 2},           {"n_embd", 64},
    {"n_head", 4},       {"n_kv_head", 2},         {"intermediate_size", 128},
    {"vocab_size", 256}, {"seq_len", 32},          {"rope_theta", 10000.0},
    {"norm_eps", 1e-5},  {"tie_embeddings", false}};

// Every run of the comparison: 4 rows of 32 tokens a step (micro × gas × dp),
// AdamW as transformers' reference script configures torch.optim.AdamW.
nlohmann::json reference_patch(const std::string& data, const std::string& init_from) {
  return {
      {"train_micro_batch_size_per_gpu", 4},
      {"optimizer",
       {{"type", "AdamW"},
        {"params", {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"eps", 1e-8}, {"weight_decay", 0.1}}}}},
      {"hybrid",
       {{"model", kReferenceModel},
        {"data", {{"train", data}}},
        {"init_from", init_from},
        {"seed", 7}}}};
}

// The reference Llama as the engine reads it.
ModelConfig reference_model() {
  return parse_config(test::tiny_config_json({{"hybrid", {{"model", kReferenceModel}}}}), 1).model;
}

// The whole model's weights from a fixed generator (xorshift64: the same
// values on every platform), uniform in [-0.1, 0.1), the norms' around 1.
std::vector<float> reference_weights(const ModuleTree& tree) {
  std::vector<float> flat(size_t(tree.full_param_count()));
  uint64_t x = 88172645463325252ull;
  for (const ParamSpec* p : tree.params())
    for (int64_t i = 0; i < p->full_numel(); ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const float u = 0.2f * (float(x >> 40) / float(1 << 24) - 0.5f);
      flat[size_t(p->full_offset + i)] = p->full_shape.size() == 1 ? 1.0f + u : u;
    }
  return flat;
}

// Token k of the training stream (scripts/peers/llama_hf_reference.py: token).
uint16_t reference_token(uint32_t k) { return uint16_t(uint32_t(k * 2654435761u) >> 24); }

// Writes the reference directory and token stream into `dir`.
void write_reference(const std::string& dir) {
  auto model = make_model(reference_model(), 256, {});
  ModuleTree tree(*model);
  model->write_weights(tree, reference_weights(tree), {"", dir + "/hf"});
  std::vector<uint16_t> tokens(4096);
  for (uint32_t k = 0; k < tokens.size(); ++k) tokens[k] = reference_token(k);
  write_token_shard(dir + "/tokens.bin", tokens);
}

// Per-step losses of 10 AdamW steps under transformers 4.36.2's
// LlamaForCausalLM (torch 1.13.0, CPU, fp32) from the directory this test
// writes: scripts/peers/llama_hf_reference.py.
constexpr double kTransformersLosses[10] = {5.627517700, 5.572424889, 5.590485573, 5.288738728,
                                            5.372301579, 5.075906277, 5.068167686, 5.057128906,
                                            4.896755695, 4.799012184};

std::vector<double> train_reference(const test::TempDir& dir, const std::string& name, int ranks,
                                    const nlohmann::json& patch) {
  auto p = reference_patch(dir / "tokens.bin", dir / "hf");
  if (patch.is_object()) p.merge_patch(patch);
  const std::string cfg = dir / (name + ".json"), res = dir / (name + ".result.json");
  test::write_json(cfg, test::tiny_config_json(p));
  const auto run = test::run_command(test::launcher(ranks) + test::tool("hybrid-train") +
                                     " --quiet --steps 10 --config " + cfg + " --result " + res);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  if (run.exit_code != 0) return {};
  return test::read_json(res).at("losses").get<std::vector<double>>();
}

void expect_transformers_losses(const std::vector<double>& got, const std::string& what) {
  ASSERT_EQ(got.size(), 10u) << what;
  double worst = 0;
  for (size_t s = 0; s < 10; ++s)
    worst = std::max(worst, std::abs(got[s] - kTransformersLosses[s]));
  std::printf(
      "%s: 10 AdamW steps vs transformers 4.36.2, worst |loss diff| %.2e (first %.6f, "
      "last %.6f)\n",
      what.c_str(), worst, got.front(), got.back());
  EXPECT_LT(worst, 1e-5) << what;
}

TEST(LlamaModel, TrainsAsTransformersOnOneRank) {
  test::TempDir dir;
  write_reference(dir.path().string());
  if (const char* keep = std::getenv("HYBRID_WRITE_REFERENCE_TO")) write_reference(keep);
  expect_transformers_losses(train_reference(dir, "one", 1, {}), "1 rank");
}

TEST(LlamaModel, TrainsAsTransformersOnTwoRanksWithZero3) {
  test::TempDir dir;
  write_reference(dir.path().string());
  expect_transformers_losses(train_reference(dir, "zero3", 2,
                                             {{"train_micro_batch_size_per_gpu", 2},
                                              {"zero_optimization", {{"stage", 3}}}}),
                             "2 ranks, ZeRO-3");
}

TEST(LlamaModel, TrainsAsTransformersWithTensorParallelism) {
  test::TempDir dir;
  write_reference(dir.path().string());
  expect_transformers_losses(train_reference(dir, "tp", 2, {{"tensor_model_parallel_size", 2}}),
                             "tp=2");
}

TEST(LlamaModel, TrainsAsTransformersWithPipelineStages) {
  test::TempDir dir;
  write_reference(dir.path().string());
  expect_transformers_losses(train_reference(dir, "pp", 2,
                                             {{"train_micro_batch_size_per_gpu", 2},
                                              {"gradient_accumulation_steps", 2},
                                              {"pipeline", {{"stages", 2}}}}),
                             "pp=2");
}

// A tied Llama (lm_head is the embedding): two pipeline stages reduce the
// shared weight's gradient between the first and the last and train as one
// rank does.
TEST(LlamaModel, TiedEmbeddingsTrainAlikeOverPipelineStages) {
  test::TempDir dir;
  write_reference(dir.path().string());
  const nlohmann::json tied = {
      {"hybrid", {{"model", {{"tie_embeddings", true}}}, {"init_from", nullptr}}}};
  auto pp = tied;
  pp.merge_patch({{"train_micro_batch_size_per_gpu", 2},
                  {"gradient_accumulation_steps", 2},
                  {"pipeline", {{"stages", 2}}}});
  const auto one = train_reference(dir, "tied1", 1, tied);
  const auto two = train_reference(dir, "tied2", 2, pp);
  ASSERT_EQ(one.size(), 10u);
  ASSERT_EQ(two.size(), 10u);
  for (size_t s = 0; s < 10; ++s) EXPECT_NEAR(two[s], one[s], 1e-5) << "step " << s + 1;
  EXPECT_LT(one.back(), one.front());
}

}  // namespace
}  // namespace hybrid::engine
