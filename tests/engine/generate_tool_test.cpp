// hybrid-generate, the real binary: on an llm.c file (GPT-2) and a Hugging
// Face directory (Llama) it prints and writes the tokens the engine's own
// generate gives in-process, with latency percentiles; bad prompts, a bad
// prompts file line and bad sampling exit 2 naming what is wrong, writing nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/data/tokenizer/tokenizer.h"
#include "engine/engine.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

struct Model {
  std::unique_ptr<Engine> engine;
  std::string path;
};

// A trained tiny model written in its family's format.
Model write_model(const test::TempDir& dir, const nlohmann::json& model, bool hf) {
  const auto cfg = test::tiny_config({{"hybrid", {{"model", model}}}});
  Model m{initialize(cfg, make_model(cfg), test::quiet()), ""};
  test::train_on_changing_batches(*m.engine, 8, /*same_every_step=*/true);
  m.path = dir / (hf ? "hf" : "model.bin");
  m.engine->model().write_weights(
      m.engine->module_tree(), m.engine->gather_parameters(),
      hf ? engine::WeightFiles{"", m.path} : engine::WeightFiles{m.path, ""});
  return m;
}

const nlohmann::json kLlama = {{"type", "llama"},  {"n_layer", 2},   {"n_embd", 32},
                               {"n_head", 4},      {"n_kv_head", 2}, {"intermediate_size", 48},
                               {"vocab_size", 64}, {"seq_len", 16},  {"tie_embeddings", false}};

TEST(GenerateTool, WritesWhatTheEngineGeneratesForAnLlmcFileAndAnHfDirectory) {
  test::TempDir dir;
  for (const bool hf : {false, true}) {
    SCOPED_TRACE(hf ? "Hugging Face Llama" : "llm.c GPT-2");
    const Model m = write_model(dir, hf ? kLlama : test::tiny_gpt2_model(), hf);
    engine::GenerationParams p;
    p.max_new_tokens = 6;
    const auto want = m.engine->generate({{5, 9, 1}, {7}}, p);
    const std::string out = dir / "out.json";
    const auto r = test::run_command(test::tool("hybrid-generate") + " --model " + m.path +
                                     " --prompt-tokens 5,9,1 --prompt-tokens 7"
                                     " --max-new-tokens 6 --json " +
                                     out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = test::read_json(out);
    ASSERT_EQ(j["sequences"].size(), 2u);
    EXPECT_EQ(j["sequences"][0]["prompt_tokens"], nlohmann::json({5, 9, 1}));
    EXPECT_EQ(j["sequences"][0]["tokens"].get<std::vector<int>>(), want.tokens[0]);
    EXPECT_EQ(j["sequences"][1]["tokens"].get<std::vector<int>>(), want.tokens[1]);
    EXPECT_LE(j["ttft_ms"]["p50"].get<double>(), j["ttft_ms"]["p99"].get<double>());
    EXPECT_GT(j["tpot_ms"]["p90"].get<double>(), 0.0);
    EXPECT_GT(j["tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(j["new_tokens"], 12);
    EXPECT_NE(r.output.find("12 new tokens"), std::string::npos) << r.output;
  }
}

// hybrid-generate --model on our checkpoint directory: a run saved by two
// ranks with tensor parallelism generates what its exported llm.c file does,
// from the directory (its latest tag) or one tag's folder.
TEST(GenerateTool, ReadsOurCheckpointWhateverLayoutSavedIt) {
  test::TempDir dir;
  const std::string ckpt = dir / "ckpt";
  const auto run = test::run_hybrid_train(dir, "tp", 2, {{"tensor_model_parallel_size", 2}},
                                          "--quiet --steps 3 --save " + ckpt);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto tokens = [&](const std::string& model) {
    const std::string out = dir / "out.json";
    const auto r = test::run_command(test::tool("hybrid-generate") + " --model " + model +
                                     " --prompt-tokens 1,2,3 --prompt-tokens 9 "
                                     "--max-new-tokens 8 --json " +
                                     out);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::vector<int>> t;
    if (r.exit_code != 0) return t;
    const nlohmann::json written = test::read_json(out);
    for (const auto& s : written.at("sequences"))
      t.push_back(s.at("tokens").get<std::vector<int>>());
    return t;
  };
  const auto want = tokens(dir / "tp.bin");
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(tokens(ckpt), want);
  std::string tag;
  std::ifstream(ckpt + "/latest") >> tag;
  EXPECT_EQ(tokens(ckpt + "/" + tag), want);
  EXPECT_EQ(tokens(ckpt + "/" + tag + "/"), want) << "a tag folder named with a trailing slash";
}

TEST(GenerateTool, BadInputExitsTwoNamingItAndWritesNothing) {
  test::TempDir dir;
  const Model m = write_model(dir, test::tiny_gpt2_model(), false);
  const std::string out = dir / "out.json", prompts = dir / "prompts.jsonl";
  const auto refused = [&](const std::string& args, const std::string& says,
                           const std::string& model = "") {
    SCOPED_TRACE(args);
    const auto r =
        test::run_command(test::tool("hybrid-generate") + " --model " +
                          (model.empty() ? m.path : model) + " --json " + out + " " + args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out));
  };
  refused("--prompt-tokens 1,2,3,4,5,6,7,8,9,10,11,12 --max-new-tokens 8",
          "12 tokens plus max_new_tokens 8 exceed the block size 16");
  refused("--prompt-tokens 1,64", "token 64 at position 1 is outside the vocabulary [0, 64)");
  refused("--prompt-tokens 1,x", "\"x\" is not an integer token id");
  refused("--prompt-tokens 1 --top-p 1.5", "top_p 1.5 must be in (0, 1]");
  refused("--prompt-tokens 1 --temperature -1", "--temperature");
  refused("", "give prompts");
  {
    std::ofstream f(prompts);
    f << "{\"tokens\": [1, 2]}\n{\"tokens\": [3, \"a\"]}\n";
  }
  refused("--prompts " + prompts, "prompts.jsonl:2: token \"a\" is not an integer");
  {
    std::ofstream f(prompts);
    f << "\n{\"text\": \"Hello\"}\n";
  }
  refused("--prompts " + prompts, "prompts.jsonl:2: a \"text\" prompt needs a tokenizer");
  refused("--prompt-tokens 1",
          "neither an llm.c checkpoint, a Hugging Face directory nor a hybrid checkpoint",
          dir / "missing");
  const std::string tag_folder = dir / "ckpt/step1";
  std::filesystem::create_directories(tag_folder);
  std::ofstream(tag_folder + "/meta.json") << "{\"format\": 3}";
  refused("--prompt-tokens 1", "meta.json", tag_folder);
}

// Text prompts: a Hugging Face GPT-2 directory brings its tokenizer.json (the
// byte-level BPE the tokenizer tests prove equal to Hugging Face's), so
// --prompt and {"text": ...} lines are encoded as Hugging Face encodes them and
// the output carries the new text; without a tokenizer, text is refused by name.
TEST(GenerateTool, TextPromptsAreEncodedByTheModelFoldersTokenizer) {
  test::TempDir dir;
  const std::string tokenizer_json =
      std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/tokenizer/gpt2_style.json";
  nlohmann::json model = test::tiny_gpt2_model();
  model["vocab_size"] = 8006;  // gpt2_style.json's tokens, added ones included
  const Model m = write_model(dir, model, /*hf=*/true);
  std::filesystem::copy_file(tokenizer_json, m.path + "/tokenizer.json");
  // "Hello world" as tokenizers 0.15.2 encodes it (tests/engine/data/tokenizer/bpe_reference.json).
  const std::vector<int> hello = {40, 584, 79, 1085};
  engine::GenerationParams p;
  p.max_new_tokens = 5;
  const auto want = m.engine->generate({hello, {7}}, p);
  const auto tokenizer = engine::load_byte_level_bpe(tokenizer_json);
  const std::string prompts = dir / "prompts.jsonl";
  std::ofstream(prompts) << "{\"tokens\": [7]}\n";
  const std::string out = dir / "out.json";
  const auto r = test::run_command(test::tool("hybrid-generate") + " --model " + m.path +
                                   " --prompt 'Hello world' --prompts " + prompts +
                                   " --max-new-tokens 5 --json " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = test::read_json(out);
  ASSERT_EQ(j["sequences"].size(), 2u);
  EXPECT_EQ(j["sequences"][0]["prompt_tokens"].get<std::vector<int>>(), hello);
  for (size_t i = 0; i < 2; ++i) {
    const auto& seq = j["sequences"][i];
    EXPECT_EQ(seq["tokens"].get<std::vector<int>>(), want.tokens[i]);
    EXPECT_EQ(seq["text"].get<std::string>(), tokenizer->decode(want.tokens[i]));
  }
  // The same text from a prompts file, the tokenizer named explicitly.
  std::ofstream(prompts) << "{\"text\": \"Hello world\"}\n";
  const auto f = test::run_command(test::tool("hybrid-generate") + " --model " + m.path +
                                   " --tokenizer " + tokenizer_json + " --prompts " + prompts +
                                   " --max-new-tokens 5 --json " + out);
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(test::read_json(out)["sequences"][0]["tokens"].get<std::vector<int>>(), want.tokens[0]);
  // An llm.c file has no tokenizer: text is refused before anything runs.
  const Model bare = write_model(dir, model, /*hf=*/false);
  std::filesystem::remove(out);
  const auto refused = test::run_command(test::tool("hybrid-generate") + " --model " + bare.path +
                                         " --prompt 'Hello world' --json " + out);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("--prompt needs a tokenizer"), std::string::npos) << refused.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace hybrid
