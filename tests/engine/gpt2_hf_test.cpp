// Hugging Face GPT-2 directories: config.json maps to hybrid.model and back,
// the variants we do not run are refused naming the key, the weights round
// trip bitwise (HF's Conv1D [in, out] transposed to our [out, in], checked
// against an independent transpose), published files' mask buffers and a tied
// lm_head are accepted, and through hybrid-train: a directory and the llm.c
// file of the same weights train bitwise alike, --export-hf writes what
// --export-llmc writes, a model block that disagrees is refused naming both
// values, and an absent one is read from config.json.
#include "engine/model/gpt2/gpt2_hf.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "engine/data/data_file_error.h"
#include "engine/data/safetensors.h"
#include "engine/engine.h"
#include "engine/model/hf_directory.h"
#include "engine_test_util.h"
#include "small_gpt2_weights.h"
#include "tests/common/error_of.h"

namespace hybrid::engine {
namespace {

// The shared small GPT-2, its padding rows zero (as the engine keeps them).
Gpt2Weights random_weights(uint32_t seed) {
  Gpt2Weights w = test::small_gpt2_weights(seed);
  for (size_t i = size_t(w.vocab_size * w.channels); i < w.wte.size(); ++i) w.wte[i] = 0.0f;
  return w;
}

ModelConfig model_of(const Gpt2Weights& w) {
  return test::gpt2_sized(w.num_layers, w.channels, w.num_heads, w.vocab_size, w.max_seq_len);
}

TEST(Gpt2Hf, ConfigMapsBothWaysAndRefusesVariantsWeDoNotRun) {
  const ModelConfig m = model_of(random_weights(1));
  const auto j = gpt2_hf_config(m);
  EXPECT_EQ(j["architectures"][0], "GPT2LMHeadModel");
  const ModelConfig back = gpt2_model_config_from_hf(j, "config.json");
  EXPECT_EQ(back.n_layer, 2);
  EXPECT_EQ(back.n_embd, 8);
  EXPECT_EQ(back.n_head, 2);
  EXPECT_EQ(back.vocab_size, 50);
  EXPECT_EQ(back.seq_len, 16);
  // HF's defaults when keys are absent: GPT-2 124M.
  const ModelConfig dflt = gpt2_model_config_from_hf(nlohmann::json::object(), "c.json");
  EXPECT_EQ(dflt.n_layer, 12);
  EXPECT_EQ(dflt.n_embd, 768);
  EXPECT_EQ(dflt.vocab_size, 50257);
  EXPECT_EQ(dflt.seq_len, 1024);
  test::expect_each_refused(
      j,
      {
          {{{"activation_function", "relu"}}, "\"activation_function\" is \"relu\""},
          {{{"layer_norm_epsilon", 1e-6}}, "\"layer_norm_epsilon\" is 1e-06"},
          {{{"n_inner", 100}}, "\"n_inner\" is 100"},
          {{{"tie_word_embeddings", false}}, "\"tie_word_embeddings\" is false"},
          {{{"scale_attn_by_inverse_layer_idx", true}}, "scale_attn_by_inverse_layer_idx"},
          {{{"reorder_and_upcast_attn", true}}, "reorder_and_upcast_attn"},
          {{{"n_head", 5}}, "n_head (5) does not divide n_embd (8)"},
          {{{"n_layer", "two"}}, "\"n_layer\" is \"two\""},
      },
      [](const nlohmann::json& c, const std::string& file) { gpt2_model_config_from_hf(c, file); });
}

TEST(Gpt2Hf, WeightsRoundTripBitwiseWithConv1dTransposed) {
  test::TempDir dir;
  const Gpt2Weights w = random_weights(2);
  write_gpt2_hf(dir / "hf", w);
  EXPECT_TRUE(is_hf_directory(dir / "hf"));
  const ModelConfig m = read_hf_model_config(dir / "hf");
  const Gpt2Weights r = read_gpt2_hf(dir / "hf", m, 64);
  for (size_t t = 0; t < kLlmcTensorCount; ++t)
    EXPECT_EQ(*r.tensors()[t], *w.tensors()[t]) << Gpt2Weights::tensor_names[t];

  // The file holds HF's layout: c_attn of layer 1 is [C, 3C], element (i, o) =
  // our qkvw[layer 1][o][i].
  const SafetensorsSet set(dir / "hf");
  const int64_t C = 8;
  const auto hf = set.read_f32("transformer.h.1.attn.c_attn.weight", {C, 3 * C});
  for (int64_t i = 0; i < C; ++i)
    for (int64_t o = 0; o < 3 * C; ++o)
      ASSERT_EQ(hf[size_t(i * 3 * C + o)], w.qkvw[size_t(3 * C * C + o * C + i)]);
  EXPECT_EQ(set.read_f32("transformer.wte.weight", {50, C}).size(), size_t(50 * C))
      << "wte is stored with the real vocabulary";
}

// Published GPT-2 files: names without "transformer.", the attention mask
// buffers, and lm_head.weight equal to wte.
TEST(Gpt2Hf, PublishedLayoutsReadAndForeignTensorsAreRefused) {
  test::TempDir dir;
  const Gpt2Weights w = random_weights(3);
  write_gpt2_hf(dir / "hf", w);
  const SafetensorsSet ours(dir / "hf");
  std::vector<std::vector<float>> keep;
  keep.reserve(64);
  std::vector<StTensorOut> out;
  for (const auto& name : ours.names()) {
    const auto* t = ours.find(name);
    keep.push_back(ours.read_f32(name, t->shape));
    out.push_back({name.substr(std::string("transformer.").size()), t->shape, keep.back()});
  }
  const std::vector<float> mask(16 * 16, 1.0f);
  out.push_back({"h.0.attn.bias", {1, 1, 16, 16}, mask});
  out.push_back({"h.1.attn.masked_bias", {}, std::span<const float>(mask.data(), 1)});
  keep.push_back(ours.read_f32("transformer.wte.weight", {50, 8}));
  out.push_back({"lm_head.weight", {50, 8}, keep.back()});
  const std::string pub = dir / "published";
  write_safetensors_dir(pub, out, StDType::F32);
  std::filesystem::copy_file(dir / "hf/config.json", pub + "/config.json");
  const Gpt2Weights r = read_gpt2_hf(pub, model_of(w), 64);
  for (size_t t = 0; t < kLlmcTensorCount; ++t)
    EXPECT_EQ(*r.tensors()[t], *w.tensors()[t]) << Gpt2Weights::tensor_names[t];

  keep.back()[3] += 1.0f;  // an untied head
  write_safetensors_dir(pub, out, StDType::F32);
  EXPECT_NE(test::error_of([&] {
              read_gpt2_hf(pub, model_of(w), 64);
            }).find("lm_head.weight differs from wte.weight"),
            std::string::npos);
  out.pop_back();
  out.push_back({"h.2.attn.c_attn.bias", out[0].shape, keep[0]});  // a third layer
  write_safetensors_dir(pub, out, StDType::F32);
  EXPECT_NE(test::error_of([&] {
              read_gpt2_hf(pub, model_of(w), 64);
            }).find("tensor 'h.2.attn.c_attn.bias' is not part of GPT2LMHeadModel"),
            std::string::npos);
  std::ofstream(pub + "/config.json") << R"({"architectures": ["BertModel"]})";
  EXPECT_NE(test::error_of([&] {
              read_hf_model_config(pub);
            }).find("architecture 'BertModel' is not one hybrid trains"),
            std::string::npos);
}

// Through hybrid-train: the same weights as a directory and as an llm.c file.
TEST(Gpt2Hf, ADirectoryTrainsBitwiseAsTheLlmcFileAndExportsMatch) {
  test::TempDir dir;
  const auto first = test::run_hybrid_train_alone(
      dir, "first", {}, "--steps 2 --export-llmc " + dir / "w.bin" + " --export-hf " + dir / "hf");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const Gpt2Weights llmc = read_llmc_checkpoint(dir / "w.bin");
  const ModelConfig m = read_hf_model_config(dir / "hf");
  const Gpt2Weights hf = read_gpt2_hf(dir / "hf", m, llmc.padded_vocab_size);
  for (size_t t = 0; t < kLlmcTensorCount; ++t)
    EXPECT_EQ(*hf.tensors()[t], *llmc.tensors()[t])
        << "--export-hf vs --export-llmc: " << Gpt2Weights::tensor_names[t];

  const auto from_file = test::run_hybrid_train_alone(
      dir, "file", {{"hybrid", {{"init_from", dir / "w.bin"}}}}, "--steps 3");
  // No model block at all: config.json gives it.
  auto no_model = test::tiny_config_json({{"hybrid", {{"init_from", dir / "hf"}}}});
  no_model["hybrid"].erase("model");
  test::write_json(dir / "nomodel.json", no_model);
  const auto from_dir =
      test::run_command(test::tool("hybrid-train") + " --config " + dir / "nomodel.json" +
                        " --steps 3 --result " + dir / "dir.result.json");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.output;
  const auto dir_losses =
      test::read_json(dir / "dir.result.json").at("losses").get<std::vector<double>>();
  EXPECT_EQ(dir_losses, test::losses(from_file)) << "bitwise alike";

  const auto disagree = test::run_hybrid_train_alone(
      dir, "disagree", {{"hybrid", {{"init_from", dir / "hf"}, {"model", {{"n_layer", 3}}}}}},
      "--steps 1");
  EXPECT_EQ(disagree.exit_code, 2) << disagree.output;
  EXPECT_NE(disagree.output.find("hybrid.model.n_layer is 3, but " + dir / "hf" +
                                 "/config.json (hybrid.init_from) says 2"),
            std::string::npos)
      << disagree.output;
}

// hybrid-ckpt: llm.c file -> HF directory -> llm.c file is the same file, and a
// partitioned checkpoint consolidates into the directory --export-hf writes.
TEST(Gpt2Hf, HybridCkptConvertsBothWaysAndConsolidatesToADirectory) {
  test::TempDir dir;
  const auto run =
      test::run_hybrid_train_alone(dir, "run", {{"zero_optimization", {{"stage", 2}}}},
                                   "--steps 2 --save " + dir / "ckpt" + " --export-llmc " +
                                       dir / "w.bin" + " --export-hf " + dir / "exported");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string ckpt = test::tool("hybrid-ckpt");
  for (const std::string& cmd :
       {ckpt + " convert --in " + dir / "w.bin" + " --out-hf " + dir / "conv",
        ckpt + " convert --in " + dir / "conv" + " --out " + dir / "back.bin",
        ckpt + " consolidate --dir " + dir / "ckpt" + " --out-hf " + dir / "cons"}) {
    const auto r = test::run_command(cmd);
    ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
  }
  auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(dir / "back.bin"), bytes(dir / "w.bin"));
  EXPECT_EQ(bytes(dir / "conv/model.safetensors"), bytes(dir / "exported/model.safetensors"));
  EXPECT_EQ(bytes(dir / "cons/model.safetensors"), bytes(dir / "exported/model.safetensors"));
  EXPECT_EQ(bytes(dir / "cons/config.json"), bytes(dir / "exported/config.json"));
  const auto none = test::run_command(ckpt + " convert --in " + dir / "w.bin");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("needs --out or --out-hf"), std::string::npos) << none.output;
}

// The tiny config's GPT-2 (L 2, C 32, NH 2, V 64, T 16) with weights from a
// fixed generator, and B 2 rows of a fixed token stream.
Gpt2Weights reference_weights(int padded_vocab) {
  Gpt2Weights w;
  w.max_seq_len = 16, w.vocab_size = 64, w.padded_vocab_size = padded_vocab;
  w.num_layers = 2, w.num_heads = 2, w.channels = 32;
  w.allocate();
  uint64_t x = 88172645463325252ull;  // xorshift64: the same values on every platform
  for (auto* t : w.tensors())
    for (float& v : *t) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v = 0.2f * (float(x >> 40) / float(1 << 24) - 0.5f);  // uniform in [-0.1, 0.1)
    }
  for (size_t i = size_t(64 * 32); i < w.wte.size(); ++i) w.wte[i] = 0.0f;
  for (auto* ln : {&w.ln1w, &w.ln2w, &w.lnfw})
    for (float& v : *ln) v += 1.0f;
  return w;
}

int32_t reference_token(int k) { return int32_t((7 * k * k + 3 * k + 1) % 64); }

// Per-position cross-entropy of the two rows under transformers 4.36.2's
// GPT2LMHeadModel (torch 1.13, CPU, fp32) loading the directory this test
// writes: scripts/peers/gpt2_hf_reference.py computes them (run the test with
// HYBRID_WRITE_REFERENCE_TO=DIR to get the directory).
constexpr double kTransformersLosses[2][16] = {
    {4.551976710, 4.045273073, 4.336286422, 4.653520043, 4.451109110, 4.220200200, 4.246761482,
     3.986079742, 3.923769481, 4.347986195, 3.907084703, 4.354178745, 4.784160632, 4.092497253,
     4.293807053, 4.044641651},
    {4.123593211, 4.505864177, 3.695521246, 4.025375324, 4.138559050, 4.725934083, 4.077216101,
     4.152140430, 4.387800780, 3.940670780, 4.143330882, 4.797494890, 4.225143530, 4.841292216,
     3.665079744, 4.284989877},
};

TEST(Gpt2Hf, PerPositionLossesEqualTransformers) {
  test::TempDir dir;
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  write_gpt2_hf(dir / "ref", reference_weights(e->model().padded_vocab()));
  if (const char* keep = std::getenv("HYBRID_WRITE_REFERENCE_TO"))
    write_gpt2_hf(keep, reference_weights(e->model().padded_vocab()));
  Gpt2Weights w =
      read_gpt2_hf(dir / "ref", read_hf_model_config(dir / "ref"), e->model().padded_vocab());
  std::vector<float> flat;
  gpt2_from_llmc(test::gpt2_of(*e), e->module_tree(), w, flat);
  e->set_parameters(flat);
  std::vector<int32_t> in(32), tgt(32);
  for (int k = 0; k < 32; ++k)
    in[size_t(k)] = reference_token(k), tgt[size_t(k)] = reference_token(k + 1);
  const float mean = e->forward(in, tgt);
  const float* per = e->model().losses();
  double sum = 0, worst = 0;
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < 16; ++t) {
      const double want = kTransformersLosses[r][t];
      worst = std::max(worst, std::abs(double(per[r * 16 + t]) - want));
      sum += want;
    }
  std::printf("per-position loss vs transformers 4.36.2: worst |diff| %.2e, mean %.6f vs %.6f\n",
              worst, double(mean), sum / 32);
  EXPECT_LT(worst, 1e-5);
  EXPECT_NEAR(mean, sum / 32, 1e-5);
}

}  // namespace
}  // namespace hybrid::engine
