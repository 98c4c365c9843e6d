// Hugging Face LlamaForCausalLM directories: config.json maps to hybrid.model
// and back, the variants we do not run are refused naming the key, the weights
// round trip bitwise (q/k/v and gate/up stacked by rows, checked against the
// tensors read back one by one), and the bad inputs of a directory each get an
// error naming what is wrong. Through hybrid-train and hybrid-ckpt: an export
// trains on from its own config.json, a disagreeing model block is named, the
// llm.c format is refused for a Llama with nothing written, and a checkpoint of
// one family refuses to load as the other, naming both.
#include "engine/model/llama/llama_hf.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/data/data_file_error.h"
#include "engine/data/safetensors.h"
#include "engine/model/hf_directory.h"
#include "engine/model/llama/llama_config.h"
#include "engine/model/registry.h"
#include "engine_test_util.h"
#include "profiler/store/run_store.h"
#include "tests/common/error_of.h"

namespace hybrid::engine {
namespace {

ModelConfig small_llama(bool tied = false) {
  ModelConfig m;
  m.type = "llama", m.n_layer = 2, m.n_embd = 32, m.n_head = 4, m.n_kv_head = 2;
  m.intermediate_size = 48, m.vocab_size = 50, m.seq_len = 16, m.tie_embeddings = tied;
  return m;
}

std::vector<float> numbered(const ModuleTree& tree) {
  std::vector<float> flat(size_t(tree.full_param_count()));
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = float(i % 1000) * 1e-3f - 0.5f;
  return flat;
}

TEST(LlamaHf, ConfigMapsBothWaysAndRefusesVariantsWeDoNotRun) {
  const auto j = llama_hf_config(small_llama());
  EXPECT_EQ(j["architectures"][0], "LlamaForCausalLM");
  const ModelConfig back = llama_model_config_from_hf(j, "config.json");
  EXPECT_EQ(back.type, "llama");
  EXPECT_EQ(back.n_layer, 2);
  EXPECT_EQ(back.n_embd, 32);
  EXPECT_EQ(back.n_head, 4);
  EXPECT_EQ(back.n_kv_head, 2);
  EXPECT_EQ(back.intermediate_size, 48);
  EXPECT_EQ(back.vocab_size, 50);
  EXPECT_EQ(back.seq_len, 16);
  EXPECT_FALSE(back.tie_embeddings);
  EXPECT_EQ(back.norm_eps, 1e-5);
  // LlamaConfig's defaults when keys are absent: Llama 2 7B's shape.
  const ModelConfig dflt = llama_model_config_from_hf(nlohmann::json::object(), "c.json");
  EXPECT_EQ(dflt.n_layer, 32);
  EXPECT_EQ(dflt.n_embd, 4096);
  EXPECT_EQ(dflt.kv_heads(), 32);
  EXPECT_EQ(dflt.intermediate_size, 11008);
  EXPECT_EQ(dflt.norm_eps, 1e-6);
  EXPECT_FALSE(dflt.tie_embeddings);
  test::expect_each_refused(
      j,
      {
          {{{"hidden_act", "gelu"}}, "\"hidden_act\" is \"gelu\""},
          {{{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}}, "\"rope_scaling\" is"},
          {{{"attention_bias", true}}, "\"attention_bias\" is true"},
          {{{"mlp_bias", true}}, "\"mlp_bias\" is true"},
          {{{"head_dim", 16}}, "\"head_dim\" is 16"},
          {{{"num_attention_heads", 5}},
           "num_attention_heads (5) does not divide hidden_size (32)"},
          {{{"num_key_value_heads", 3}},
           "num_key_value_heads (3) does not divide num_attention_heads"},
          {{{"num_attention_heads", 32}, {"num_key_value_heads", 32}}, "head size must be even"},
          {{{"intermediate_size", -1}}, "\"intermediate_size\" is -1"},
          {{{"num_hidden_layers", "two"}}, "\"num_hidden_layers\" is \"two\""},
          {{{"num_hidden_layers", 2.5}}, "\"num_hidden_layers\" is 2.5"},
          {{{"hidden_size", 1e300}}, "\"hidden_size\" is"},
          {{{"vocab_size", 4294967296}}, "\"vocab_size\" is 4294967296"},
      },
      [](const nlohmann::json& c, const std::string& file) {
        llama_model_config_from_hf(c, file);
      });
}

TEST(LlamaHf, WeightsRoundTripBitwiseWithQkvAndGateUpStackedByRows) {
  test::TempDir dir;
  for (bool tied : {false, true}) {
    const ModelConfig m = small_llama(tied);
    auto model = make_model(m, 128);
    ModuleTree tree(*model);
    auto flat = numbered(tree);
    for (const ParamSpec* p : tree.params())  // padded vocabulary rows are 0
      if (p->name == "embedding.wte" || p->name == "lm_head.weight")
        std::fill(flat.begin() + p->full_offset + 50 * 32,
                  flat.begin() + p->full_offset + p->full_numel(), 0.0f);
    const std::string out = dir / (tied ? "tied" : "untied");
    model->write_weights(tree, flat, {"", out});
    EXPECT_EQ(read_hf_model_config(out).tie_embeddings, tied);
    EXPECT_EQ(model->read_weights(out, tree), flat) << "tied " << tied;
    const SafetensorsSet set(out);
    EXPECT_EQ(set.find("lm_head.weight") != nullptr, !tied);
    // Layer 1's k_proj is rows [32, 48) of qkv_proj (4 heads of 8 for q, then
    // 2 kv heads of 8), up_proj rows [48, 96) of gate_up_proj.
    for (const ParamSpec* p : tree.params()) {
      auto rows = [&](int64_t begin, int64_t end) {
        return std::vector<float>(flat.begin() + p->full_offset + begin * 32,
                                  flat.begin() + p->full_offset + end * 32);
      };
      if (p->name == "h.1.self_attn.qkv_proj.weight") {
        EXPECT_EQ(set.read_f32("model.layers.1.self_attn.k_proj.weight", {16, 32}), rows(32, 48));
      }
      if (p->name == "h.1.mlp.gate_up_proj.weight") {
        EXPECT_EQ(set.read_f32("model.layers.1.mlp.up_proj.weight", {48, 32}), rows(48, 96));
      }
    }
  }
}

// Each bad directory gets an error naming the problem (and the tensor or key).
TEST(LlamaHf, BadDirectoriesAreRefusedNamingWhatIsWrong) {
  test::TempDir dir;
  const ModelConfig m = small_llama();
  auto model = make_model(m, 128);
  ModuleTree tree(*model);
  const auto flat = numbered(tree);
  const std::string good = dir / "good";
  model->write_weights(tree, flat, {"", good});
  auto variant = [&](const std::string& name, const std::function<void(const std::string&)>& edit) {
    const std::string d = dir / name;
    std::filesystem::copy(good, d, std::filesystem::copy_options::recursive);
    edit(d);
    return test::error_of([&] { model->read_weights(d, tree); });
  };
  // Rewrites the safetensors file without `drop` and with `extra` added.
  auto rewrite = [&](const std::string& d, const std::string& drop, const StTensorOut* extra) {
    const SafetensorsSet set(good);
    std::vector<std::vector<float>> keep;
    std::vector<StTensorOut> out;
    for (const auto& name : set.names()) {
      if (name == drop) continue;
      keep.push_back(set.read_f32(name, set.find(name)->shape));
      out.push_back({name, set.find(name)->shape, keep.back()});
    }
    if (extra) out.push_back(*extra);
    std::filesystem::remove(d + "/model.safetensors");
    write_safetensors_dir(d, out, StDType::F32);
  };
  EXPECT_NE(variant("missing",
                    [&](const std::string& d) {
                      rewrite(d, "model.layers.1.mlp.down_proj.weight", nullptr);
                    })
                .find("no tensor 'model.layers.1.mlp.down_proj.weight'"),
            std::string::npos);
  const std::vector<float> wrong(32 * 33);
  const StTensorOut bad_shape{"model.layers.0.self_attn.o_proj.weight", {32, 33}, wrong};
  EXPECT_NE(variant("shape",
                    [&](const std::string& d) {
                      rewrite(d, "model.layers.0.self_attn.o_proj.weight", &bad_shape);
                    })
                .find("'model.layers.0.self_attn.o_proj.weight' has shape [32, 33], the model "
                      "needs [32, 32]"),
            std::string::npos);
  const StTensorOut foreign{"model.layers.2.input_layernorm.weight", {32}, {wrong.data(), 32}};
  EXPECT_NE(variant("foreign", [&](const std::string& d) { rewrite(d, "", &foreign); })
                .find("tensor 'model.layers.2.input_layernorm.weight' is not part of "
                      "LlamaForCausalLM"),
            std::string::npos);
  const StTensorOut inv_freq{
      "model.layers.0.self_attn.rotary_emb.inv_freq", {4}, {wrong.data(), 4}};
  EXPECT_EQ(variant("inv_freq", [&](const std::string& d) { rewrite(d, "", &inv_freq); }), "")
      << "older files' rotary buffers are skipped";
  auto config_error = [&](const std::string& name, const nlohmann::json& patch) {
    const std::string d = dir / name;
    std::filesystem::copy(good, d, std::filesystem::copy_options::recursive);
    auto c = test::read_json(d + "/config.json");
    c.merge_patch(patch);
    test::write_json(d + "/config.json", c);
    return test::error_of([&] { read_hf_model_config(d); });
  };
  EXPECT_NE(config_error("arch", {{"architectures", {"MistralForCausalLM"}}})
                .find("architecture 'MistralForCausalLM' is not one hybrid trains (known: "
                      "GPT2LMHeadModel, LlamaForCausalLM)"),
            std::string::npos);
  EXPECT_NE(config_error("kv", {{"num_key_value_heads", 3}})
                .find("num_key_value_heads (3) does not divide num_attention_heads (4)"),
            std::string::npos);
  EXPECT_NE(config_error("heads", {{"num_attention_heads", 3}})
                .find("num_attention_heads (3) does not divide hidden_size (32)"),
            std::string::npos);
  // A truncated file: the reader validates the header before any data.
  const std::string trunc = dir / "trunc";
  std::filesystem::copy(good, trunc, std::filesystem::copy_options::recursive);
  std::filesystem::resize_file(trunc + "/model.safetensors", 4);
  EXPECT_NE(test::error_of([&] { model->read_weights(trunc, tree); }).find("model.safetensors"),
            std::string::npos);
  // No llm.c format for a Llama: refused, nothing written.
  EXPECT_NE(test::error_of([&] {
              model->write_weights(tree, flat, {dir / "w.bin", ""});
            }).find("llm.c's format holds GPT-2 only, and this model is a llama"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "w.bin"));
}

nlohmann::json llama_run_patch(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json p = {{"hybrid",
                       {{"model",
                         {{"type", "llama"},
                          {"n_layer", 2},
                          {"n_embd", 32},
                          {"n_head", 4},
                          {"n_kv_head", 2},
                          {"intermediate_size", 48},
                          {"vocab_size", 60},
                          {"seq_len", 16},
                          {"tie_embeddings", false}}}}}};
  if (extra.is_object()) p.merge_patch(extra);
  return p;
}

// Through hybrid-train: --export-hf, training on from the directory alone (its
// config.json gives the model) bitwise as from the run's own checkpoint
// weights, a model block that disagrees named, --export-llmc refused.
TEST(LlamaHf, HybridTrainExportsAndTrainsOnFromTheDirectory) {
  test::TempDir dir;
  const auto first = test::run_hybrid_train_alone(dir, "first", llama_run_patch(),
                                                  "--steps 2 --export-hf " + dir / "hf");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(read_hf_model_config(dir / "hf").kv_heads(), 2);
  auto no_model =
      test::tiny_config_json(llama_run_patch({{"hybrid", {{"init_from", dir / "hf"}}}}));
  no_model["hybrid"].erase("model");
  test::write_json(dir / "nomodel.json", no_model);
  const auto from_dir = test::run_command(
      test::tool("hybrid-train") + " --config " + dir / "nomodel.json" + " --steps 3 --export-hf " +
      dir / "again" + " --result " + dir / "dir.result.json" + " --db " + dir / "runs.db");
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.output;
  // The run store keeps the model it ran, which the config left to config.json.
  profiler::RunStore store(dir / "runs.db", profiler::OpenMode::read_only);
  const auto run_id = test::read_json(dir / "dir.result.json").at("run_id").get<int64_t>();
  const auto stored = nlohmann::json::parse(store.get_run(run_id).config_json);
  EXPECT_EQ(stored["hybrid"]["model"]["type"], "llama");
  EXPECT_EQ(stored["hybrid"]["model"]["n_kv_head"], 2);
  EXPECT_EQ(stored["hybrid"]["model"]["tie_embeddings"], false);
  const auto with_model = test::run_hybrid_train_alone(
      dir, "with", llama_run_patch({{"hybrid", {{"init_from", dir / "hf"}}}}), "--steps 3");
  ASSERT_EQ(with_model.exit_code, 0) << with_model.output;
  EXPECT_EQ(test::read_json(dir / "dir.result.json").at("losses").get<std::vector<double>>(),
            test::losses(with_model))
      << "the model from config.json is the model block's";

  const auto disagree = test::run_hybrid_train_alone(
      dir, "disagree",
      llama_run_patch({{"hybrid", {{"init_from", dir / "hf"}, {"model", {{"n_kv_head", 4}}}}}}),
      "--steps 1");
  EXPECT_EQ(disagree.exit_code, 2) << disagree.output;
  EXPECT_NE(disagree.output.find("hybrid.model.n_kv_head is 4, but " + dir / "hf" +
                                 "/config.json (hybrid.init_from) says 2"),
            std::string::npos)
      << disagree.output;
  const auto llmc = test::run_hybrid_train_alone(dir, "llmc", llama_run_patch(),
                                                 "--steps 1 --export-llmc " + dir / "w.bin");
  EXPECT_EQ(llmc.exit_code, 2) << "refused before training: " << llmc.output;
  EXPECT_NE(llmc.output.find("--export-llmc " + dir / "w.bin" + ": " + dir / "w.bin" +
                             ": llm.c's format holds GPT-2 only, and this model is a llama"),
            std::string::npos)
      << llmc.output;
  EXPECT_EQ(llmc.output.find("step "), std::string::npos) << "no step ran";

  // A damaged init_from is refused before anything is built or written.
  std::filesystem::copy(dir / "hf", dir / "trunc", std::filesystem::copy_options::recursive);
  std::filesystem::resize_file(dir / "trunc/model.safetensors", 100);
  const auto trunc = test::run_hybrid_train_alone(
      dir, "trunc", llama_run_patch({{"hybrid", {{"init_from", dir / "trunc"}}}}),
      "--steps 1 --save " + dir / "never" + " --export-hf " + dir / "never_hf");
  EXPECT_NE(trunc.exit_code, 0);
  EXPECT_NE(trunc.output.find(dir / "trunc/model.safetensors: header length"), std::string::npos)
      << trunc.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "never"));
  EXPECT_FALSE(std::filesystem::exists(dir / "never_hf"));
  EXPECT_FALSE(std::filesystem::exists(dir / "w.bin"));
}

// A Llama's full checkpoint keeps its weights as a Hugging Face directory; a
// resumed run continues bitwise; hybrid-ckpt consolidates a partitioned one
// into the directory --export-hf writes; a GPT-2 config refuses the Llama's
// checkpoints naming both families.
TEST(LlamaHf, CheckpointsResumeExactlyAndRefuseTheOtherFamily) {
  test::TempDir dir;
  // A full checkpoint every 2 steps: the resume state and the consolidated weights.
  const auto zero2 = llama_run_patch(
      {{"zero_optimization", {{"stage", 2}}}, {"hybrid", {{"checkpoint", {{"interval", 2}}}}}});
  const auto whole = test::run_hybrid_train_alone(dir, "whole", zero2, "--steps 6");
  const auto part = test::run_hybrid_train_alone(
      dir, "part", zero2, "--steps 4 --save " + dir / "ckpt" + " --export-hf " + dir / "exported");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(part.exit_code, 0) << part.output;
  const auto resumed =
      test::run_hybrid_train_alone(dir, "resumed", zero2, "--steps 2 --load " + dir / "ckpt");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto all = test::losses(whole), tail = test::losses(resumed);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(std::vector<double>(all.end() - 2, all.end()), tail) << "bitwise";

  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt/step000004/model/model.safetensors"));
  const auto cons = test::run_command(test::tool("hybrid-ckpt") + " consolidate --dir " +
                                      dir / "ckpt" + " --out-hf " + dir / "cons");
  ASSERT_EQ(cons.exit_code, 0) << cons.output;
  const SafetensorsSet a(dir / "cons"), b(dir / "exported");
  for (const auto& name : b.names())
    EXPECT_EQ(a.read_f32(name, b.find(name)->shape), b.read_f32(name, b.find(name)->shape)) << name;

  const auto gpt2 = test::run_hybrid_train_alone(dir, "gpt2", nlohmann::json::object(),
                                                 "--steps 1 --load " + dir / "ckpt");
  EXPECT_NE(gpt2.exit_code, 0);
  EXPECT_NE(gpt2.output.find("model.type llama, this config has gpt2"), std::string::npos)
      << gpt2.output;
}

}  // namespace
}  // namespace hybrid::engine
