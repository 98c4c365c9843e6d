// hybrid-ckpt: inspects, consolidates and converts checkpoints.
//   hybrid-ckpt consolidate --dir DIR [--tag TAG] --out model.bin   (llm.c fp32 weights)
//   hybrid-ckpt consolidate --dir DIR [--tag TAG] --out-hf HF_DIR   (Hugging Face directory)
//   hybrid-ckpt convert --in model.bin --out-hf HF_DIR   (or --in HF_DIR --out model.bin)
//   hybrid-ckpt info --dir DIR [--tag TAG]
// No MPI needed: partitions are flat ranges, read straight from the files.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "base/cli_checks.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/whole_model.h"
#include "engine/data/data_file_error.h"
#include "engine/model/registry.h"

using namespace hybrid::engine;

namespace {

ModelConfig model_of(const nlohmann::json& meta) {
  const auto& m = meta.at("model");
  ModelConfig c;
  c.type = m.at("type").get<std::string>();
  c.n_layer = m.at("n_layer").get<int>();
  c.n_embd = m.at("n_embd").get<int>();
  c.n_head = m.at("n_head").get<int>();
  c.vocab_size = m.at("vocab_size").get<int>();
  c.padded_vocab_size = m.at("padded_vocab_size").get<int>();
  c.seq_len = m.at("seq_len").get<int>();
  // Absent from checkpoints written before the Llama fields: the defaults.
  c.n_kv_head = m.value("n_kv_head", c.n_kv_head);
  c.intermediate_size = m.value("intermediate_size", c.intermediate_size);
  c.rope_theta = m.value("rope_theta", c.rope_theta);
  c.norm_eps = m.value("norm_eps", c.norm_eps);
  c.tie_embeddings = m.value("tie_embeddings", c.tie_embeddings);
  return c;
}

// An llm.c file or a Hugging Face directory to the other form.
int convert(const std::string& in, const std::string& out, const std::string& out_hf) {
  const auto stored = stored_model_in(in);
  if (!stored)
    throw DataFileError(
        fmt::format("{}: neither an llm.c checkpoint nor a Hugging Face directory", in));
  const auto model = make_model(stored->model, stored->padded_vocab);
  const ModuleTree tree(*model);
  model->write_weights(tree, model->read_weights(in, tree), {out, out_hf});
  std::printf("converted %s into %s\n", in.c_str(), (out.empty() ? out_hf : out).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybrid-ckpt: inspect and consolidate hybrid checkpoints"};
  app.require_subcommand(1);
  std::string dir, tag, out, out_hf, in;
  auto* consolidate = app.add_subcommand(
      "consolidate",
      "write all partitions' fp32 weights as one llm.c checkpoint or Hugging Face directory");
  consolidate->add_option("--dir", dir, "checkpoint directory")->required();
  consolidate->add_option("--tag", tag, "tag (default: the `latest` file)");
  consolidate->add_option("--out", out, "llm.c checkpoint to write");
  consolidate->add_option("--out-hf", out_hf, "Hugging Face directory to write (fp32)");
  auto* conv = app.add_subcommand("convert",
                                  "an llm.c checkpoint to a Hugging Face directory, "
                                  "or back");
  conv->add_option("--in", in, "llm.c checkpoint or Hugging Face directory")
      ->required()
      ->check(CLI::ExistingPath);
  auto* v_out = conv->add_option("--out", out, "llm.c checkpoint to write (fp32)");
  auto* v_hf = conv->add_option("--out-hf", out_hf, "Hugging Face directory to write (fp32)");
  v_out->excludes(v_hf);
  v_hf->excludes(v_out);
  auto* info = app.add_subcommand("info", "print a checkpoint's metadata");
  info->add_option("--dir", dir, "checkpoint directory")->required();
  info->add_option("--tag", tag, "tag (default: the `latest` file)");
  if (auto status = hybrid::base::parse_command_line(app, argc, argv, 1)) return *status;

  try {
    if ((*conv || *consolidate) && out.empty() && out_hf.empty()) {
      std::fprintf(stderr, "hybrid-ckpt: %s needs --out or --out-hf\n",
                   *conv ? "convert" : "consolidate");
      return 2;
    }
    if (*conv) return convert(in, out, out_hf);
    const std::string resolved = resolve_checkpoint_tag(dir, tag);
    const auto meta = read_checkpoint_meta(dir, resolved);
    if (*info) {
      std::printf("%s\n", meta.dump(2).c_str());
      return 0;
    }
    const int padded_vocab = meta.at("model").at("padded_vocab_size").get<int>();
    const auto model = make_model(model_of(meta), padded_vocab);
    ModuleTree tree(*model);
    const int64_t n = tree.param_count();
    if (n != meta.at("param_count").get<int64_t>())
      throw CheckpointError(
          fmt::format("checkpoint {}/{}: {} parameters recorded, the model has {}", dir, resolved,
                      meta.at("param_count").get<int64_t>(), n));
    // Tensor-parallel pieces are put back into whole tensors.
    const auto flat = read_whole_model(dir, resolved, meta, model_of(meta), padded_vocab, 0);
    model->write_weights(tree, flat, {out, out_hf});
    std::printf("consolidated %s/%s (step %lld, %d partitions) into %s (%lld fp32 parameters)\n",
                dir.c_str(), resolved.c_str(), (long long)meta.at("global_step").get<int64_t>(),
                int(meta.at("partitions").size()), (out.empty() ? out_hf : out).c_str(),
                (long long)n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hybrid-ckpt: %s\n", e.what());
    return 1;
  }
  return 0;
}
