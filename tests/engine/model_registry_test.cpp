// The model registry: every hybrid.model.type builds a CausalLM, an unknown
// one is refused naming the known ones (by make_model and by the config
// parser), and a weights file or directory says which model it holds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/units.h"
#include "engine/config/config.h"
#include "engine/model/gpt2/gpt2_hf.h"
#include "engine/model/registry.h"
#include "engine_test_util.h"
#include "small_gpt2_weights.h"

namespace hybrid::engine {
namespace {

using ::testing::HasSubstr;

TEST(ModelRegistry, EveryTypeBuildsAModelOfItsConfigAndAnUnknownOneIsRefused) {
  ASSERT_FALSE(model_types().empty());
  for (const std::string& type : model_types()) {
    ModelConfig m;
    m.type = type;
    m.n_layer = 3;
    const auto model = make_model(m, 128);
    EXPECT_EQ(model->config().type, type);
    EXPECT_EQ(model->num_blocks(), 3) << type;
    EXPECT_EQ(model->padded_vocab(), 128) << type;
    // Every block is a distinct module of the tree, in order.
    const ModuleTree tree(*model);
    for (int l = 1; l < 3; ++l) EXPECT_LT(model->block(l - 1).id(), model->block(l).id());
  }
  ModelConfig m;
  m.type = "mamba";
  try {
    make_model(m, 128);
    FAIL() << "an unknown type was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("'mamba'"));
    EXPECT_THAT(e.what(), HasSubstr(model_types().front()));
  }
  try {
    parse_config(test::tiny_config_json({{"hybrid", {{"model", {{"type", "mamba"}}}}}}), 1);
    FAIL() << "the config parser took an unknown type";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("hybrid.model.type"));
    EXPECT_THAT(e.what(), HasSubstr(model_types().front()));
  }
}

// The key/value cache each family lays out: keys and values of every block
// over its key/value heads, 2·L·B·T·NKV·hs elements (an independent count);
// grouped-query attention and tensor parallelism shrink it by their factors.
TEST(ModelRegistry, TheKvCacheHoldsEveryBlocksKeysAndValuesOverItsKvHeads) {
  for (const std::string& type : model_types()) {
    ModelConfig m;
    m.type = type, m.n_layer = 3, m.n_embd = 64, m.n_head = 8;
    const int B = 2, T = 40, hs = 8;
    const uint64_t mha = 2ull * 3 * B * T * 8 * hs * 4;  // fp32
    const auto layout = make_model(m, 128)->kv_cache_layout(B, T, kernels::DType::f32);
    EXPECT_EQ(layout.resident_total(), mha) << type;
    ASSERT_EQ(layout.entries().size(), 6u) << type;
    EXPECT_EQ(layout.entries()[0].name, "h.0.cache.k") << type;
    EXPECT_EQ(layout.entries()[5].name, "h.2.cache.v") << type;
    EXPECT_EQ(
        make_model(m, 128, {2, 1})->kv_cache_layout(B, T, kernels::DType::bf16).resident_total(),
        mha / 2 / 2)
        << type << ": a tp rank's half of the heads in bf16";
    if (type == "gpt2") continue;  // GPT-2 has as many key/value heads as heads
    m.n_kv_head = 2;
    EXPECT_EQ(make_model(m, 128)->kv_cache_layout(B, T, kernels::DType::f32).resident_total(),
              mha / 4)
        << type << ": 2 key/value heads for 8 query heads";
  }
}

// A family refuses, at parse time, what it does not vary; key/value heads
// must divide the heads.
TEST(ModelRegistry, AFamilyRefusesTheFieldsItDoesNotVaryNamingKeyAndValue) {
  const std::pair<nlohmann::json, const char*> cases[] = {
      {{{"n_head", 4}, {"n_kv_head", 2}}, "hybrid.model.n_kv_head 2: GPT-2 has as many"},
      {{{"n_embd", 64}, {"intermediate_size", 100}}, "hybrid.model.intermediate_size 100"},
      {{{"tie_embeddings", false}}, "hybrid.model.tie_embeddings false"},
      {{{"rope_theta", 500000.0}}, "hybrid.model.rope_theta 500000"},
      {{{"norm_eps", 1e-6}}, "hybrid.model.norm_eps 1e-06"},
      {{{"n_head", 4}, {"n_kv_head", 3}},
       "n_head (4) must be divisible by hybrid.model.n_kv_head (3)"},
  };
  for (const auto& [model, expected] : cases) {
    try {
      parse_config(test::tiny_config_json({{"hybrid", {{"model", model}}}}), 1);
      FAIL() << model.dump() << " was taken";
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), HasSubstr(expected)) << model.dump();
    }
  }
  // GPT-2's own values are taken.
  const auto ok = parse_config(
      test::tiny_config_json(
          {{"hybrid", {{"model", {{"n_head", 4}, {"n_kv_head", 4}, {"norm_eps", 1e-5}}}}}}),
      1);
  EXPECT_EQ(ok.model.kv_heads(), 4);
}

// An llm.c file and a Hugging Face directory of the same small GPT-2 hold the
// same model; hybrid-data info names it with its parameter count.
TEST(ModelRegistry, AWeightsFileOrDirectorySaysWhichModelItHolds) {
  test::TempDir dir;
  const Gpt2Weights w = test::small_gpt2_weights(3);
  write_llmc_checkpoint(dir / "small.bin", w);
  write_gpt2_hf(dir / "small_hf", w);
  const auto file = stored_model_in(dir / "small.bin");
  const auto hf = stored_model_in(dir / "small_hf");
  ASSERT_TRUE(file && hf);
  EXPECT_EQ(file->format, "llm.c");
  EXPECT_EQ(hf->format, "Hugging Face");
  for (const StoredModel* s : {&*file, &*hf}) {
    EXPECT_EQ(s->model.type, "gpt2");
    EXPECT_EQ(s->model.n_layer, 2);
    EXPECT_EQ(s->model.n_embd, 8);
    EXPECT_EQ(s->model.n_head, 2);
    EXPECT_EQ(s->model.vocab_size, 50);
    EXPECT_EQ(s->model.seq_len, 16);
  }
  EXPECT_EQ(file->padded_vocab, 64);  // the file's own
  EXPECT_EQ(hf->padded_vocab, 128);   // a directory holds the real 50 rows: llm.c's padding
  std::ofstream(dir / "tokens.bin") << "not weights";
  EXPECT_FALSE(stored_model_in(dir / "tokens.bin"));

  const std::string tool = std::string(HYBRID_BINARY_DIR) + "/engine/hybrid-data";
  const auto info = test::run_command(tool + " info " + (dir / "small.bin"));
  EXPECT_EQ(info.exit_code, 0) << info.output;
  EXPECT_THAT(info.output, HasSubstr(fmt::format("llm.c gpt2 checkpoint, {} parameters",
                                                 base::format_count(double(w.num_parameters())))));
  EXPECT_THAT(info.output, HasSubstr("L=2 C=8 NH=2 V=50 Vp=64 maxT=16"));
}

}  // namespace
}  // namespace hybrid::engine
