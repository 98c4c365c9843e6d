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
#include "engine/checkpoint/checkpoint_model.h"
#include "engine/data/data_file_error.h"
#include "engine/model/registry.h"

using namespace hybrid::engine;

namespace {

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
    const CheckpointModel ckpt{dir, resolved, meta, model_of_checkpoint(meta)};
    const auto model = make_model(ckpt.model, ckpt.model.padded_vocab_size);
    ModuleTree tree(*model);
    const int64_t n = tree.param_count();
    const auto flat = read_checkpoint_weights(ckpt, n);
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
