// Training at T < the block size (hybrid.data.seq_len): an llm.c checkpoint with
// block 64 trains at T = 16 exactly as a block-16 model with the same weights
// for its first 16 positions does (bitwise losses: positions past T are never
// read), the memory model and the FLOPs count the training T, and T past the
// block size is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine/trainer.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

nlohmann::json block(int block_size, int T) {
  nlohmann::json data = {{"synthetic", {{"tokens", 20000}}}};
  if (T > 0) data["seq_len"] = T;
  return {{"hybrid", {{"model", {{"seq_len", block_size}}}, {"data", data}}},
          {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}}}}}};
}

struct Run {
  int exit_code = -1;
  std::string output;
  nlohmann::json result;
};

Run hybrid_train(const test::TempDir& dir, const std::string& name, nlohmann::json patch,
                 const std::string& init_from) {
  patch["hybrid"]["init_from"] = init_from;
  const std::string cfg = dir / (name + ".json"), res = dir / (name + ".result.json");
  test::write_json(cfg, test::tiny_config_json(patch));
  const auto c = test::run_command(test::tool("hybrid-train") + " --config " + cfg +
                                   " --steps 8 --result " + res);
  Run r{c.exit_code, c.output, {}};
  if (std::filesystem::exists(res)) r.result = test::read_json(res);
  return r;
}

TEST(SeqLen, Block64AtT16TrainsLikeBlock16WithTheSameWeights) {
  test::TempDir dir;
  // An llm.c checkpoint with block 64 (random GPT-2 initialisation), and its
  // block-16 twin: the same tensors, wpe cut to its first 16 rows.
  const auto cfg64 = test::tiny_config(block(64, 0));
  auto e = initialize(cfg64, make_model(cfg64), test::quiet());
  engine::Gpt2Weights w64;
  engine::gpt2_to_llmc(test::gpt2_of(*e), e->module_tree(), e->gather_parameters(), w64);
  ASSERT_EQ(w64.max_seq_len, 64);
  engine::write_llmc_checkpoint(dir / "block64.bin", w64);
  engine::Gpt2Weights w16 = w64;
  w16.max_seq_len = 16;
  w16.wpe.resize(size_t(16 * w64.channels));
  engine::write_llmc_checkpoint(dir / "block16.bin", w16);

  const auto long_block = hybrid_train(dir, "b64t16", block(64, 16), dir / "block64.bin");
  const auto short_block = hybrid_train(dir, "b16", block(16, 0), dir / "block16.bin");
  ASSERT_EQ(long_block.exit_code, 0) << long_block.output;
  ASSERT_EQ(short_block.exit_code, 0) << short_block.output;
  EXPECT_NE(long_block.output.find("seq 16 (block size 64)"), std::string::npos)
      << long_block.output;
  const auto a = long_block.result.at("losses").get<std::vector<double>>();
  const auto b = short_block.result.at("losses").get<std::vector<double>>();
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b) << "bitwise: the same batches, weights and arithmetic";
  EXPECT_LT(a.back(), a.front()) << "it trained";
  // FLOPs: the attention term and the token count use T = 16 in both, and the
  // 48 extra wpe rows are a lookup, not a matmul (CausalLM::matmul_params): the
  // model FLOPs are equal.
  EXPECT_DOUBLE_EQ(long_block.result.at("flops_per_step").get<double>(),
                   short_block.result.at("flops_per_step").get<double>());
  EXPECT_GT(long_block.result.at("flops_per_step").get<double>(), 0.0);
}

TEST(SeqLen, MemoryModelUsesTheTrainingLength) {
  const auto cfg = test::tiny_config(block(64, 16));
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  e->allocator().reset_peaks();
  std::vector<int32_t> tokens(size_t(cfg.train_micro_batch_size_per_gpu) * 16, 3);
  for (int s = 0; s < 2; ++s) {
    e->forward(tokens, tokens);
    e->backward();
    e->step();
  }
  const auto predicted = engine::predict_memory(cfg, 1, e->backend());
  const auto measured = e->allocator().stats();
  for (int c = 0; c < engine::kMemCategoryCount; ++c)
    EXPECT_EQ(measured.peak[size_t(c)], predicted.bytes[size_t(c)])
        << engine::mem_category_name(engine::MemCategory(c));
  // Activations are those of T = 16, not of the block size.
  auto at_block = cfg;
  at_block.data.seq_len = 64;
  const auto bigger = engine::predict_memory(at_block, 1, e->backend());
  const auto act = size_t(engine::MemCategory::activations);
  EXPECT_LT(predicted.bytes[act] * 3, bigger.bytes[act]);
  EXPECT_EQ(model_flops_per_step(cfg, e->model().matmul_params(), 1) <
                model_flops_per_step(at_block, e->model().matmul_params(), 1),
            true);
}

TEST(SeqLen, LongerThanTheBlockIsRefused) {
  test::TempDir dir;
  const std::string cfg = dir / "bad.json";
  test::write_json(cfg, test::tiny_config_json(block(16, 32)));
  const auto r = test::run_command(test::tool("hybrid-train") + " --config " + cfg + " --steps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("config: hybrid.data.seq_len (32) must not exceed the block size "
                          "hybrid.model.seq_len (16)"),
            std::string::npos)
      << r.output;
  // The model refuses it too when built directly.
  auto c = test::tiny_config(block(16, 0));
  c.data.seq_len = 32;
  EXPECT_THROW(initialize(c, make_model(c), test::quiet()), std::invalid_argument);
}

}  // namespace
}  // namespace hybrid
