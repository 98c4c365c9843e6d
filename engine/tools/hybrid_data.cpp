// hybrid-data: llm.c-format data files.
//   hybrid-data synth --out DIR --tokens N --vocab V [--seed S] [--shard-tokens M] [--val-tokens K]
//       writes train_000000.bin … and val_000000.bin … of a synthetic Markov-chain stream
//       with learnable structure, and prints its entropies.
//   hybrid-data info FILE...
//       validates token shards and llm.c checkpoints and prints what they hold.
//   hybrid-data train-tokenizer --type unigram|bpe --vocab N --out PATH [--threads N] FILES...
//       trains a SentencePiece model (identity normalization, byte fallback, <unk> <s> </s>)
//       on plain text files (one document each) and JSONL files ("text" a line), writes PATH
//       (and PATH's .vocab) atomically, prints one summary line (docs/text.md); --verbose
//       shows the library's own log.
//   hybrid-data tokenize --tokenizer FILE|DIR --out DIR [--val-fraction F] [--threads N] FILES...
//       text files, JSONL files and folders into token shards, each document after the
//       end-of-text token; a progress bar on stderr (docs/text.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/cli_checks.h"
#include "base/units.h"
#include "engine/data/data_file_error.h"
#include "engine/data/synthetic.h"
#include "engine/data/token_shard.h"
#include "engine/model/registry.h"
#include "engine/tools/hybrid_data_tokenize.h"
#include "engine/tools/hybrid_data_train_tokenizer.h"

namespace {

using namespace hybrid::engine;
using hybrid::base::format_count;
using hybrid::base::format_duration;

struct SynthOptions {
  std::string out;
  int64_t tokens = 0;
  int vocab = 0;
  uint64_t seed = 1234;
  int64_t shard_tokens = 100'000'000;  // llm.c's FineWeb shards hold 100M tokens
  int64_t val_tokens = -1;             // -1: a tenth of --tokens
  int branching = 4;
  double noise = 0.05;
};

int run_synth(const SynthOptions& o) {
  SyntheticSpec spec;
  spec.vocab_size = o.vocab;
  spec.branching = o.branching;
  spec.noise = o.noise;
  spec.seed = o.seed;
  const int64_t val_tokens = o.val_tokens < 0 ? o.tokens / 10 : o.val_tokens;
  const auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& file, int64_t done, int64_t total) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double eta = done > 0 ? elapsed * double(total - done) / double(done) : 0.0;
    const std::string when = done < total ? "ETA " + format_duration(eta) : "done";
    fmt::print("wrote {}  [{:5.1f}%, {} tokens, {}]\n", file, 100.0 * double(done) / double(total),
               format_count(double(done)), when);
    std::fflush(stdout);
  };
  const SyntheticShards r =
      write_synthetic_shards(o.out, spec, o.tokens, val_tokens, o.shard_tokens, progress);
  fmt::print("train: {} tokens, val: {} tokens, vocab {}, branching {}, noise {}, seed {}\n",
             format_count(double(r.train_tokens)), format_count(double(r.val_tokens)), o.vocab,
             o.branching, o.noise, o.seed);
  fmt::print("unigram entropy: {:.4f} nats/token (measured on the training stream)\n",
             r.unigram_entropy);
  fmt::print("entropy rate:    {:.4f} nats/token (analytic: the lowest achievable loss)\n",
             r.entropy_rate);
  return 0;
}

int run_info(const std::vector<std::string>& files) {
  int status = 0;
  for (const auto& file : files) {
    try {
      if (!std::ifstream(file, std::ios::binary))
        throw DataFileError(fmt::format("{}: cannot open: {}", file, std::strerror(errno)));
      if (const auto stored = hybrid::engine::stored_model_in(file)) {
        const auto& m = stored->model;
        const auto model = hybrid::engine::make_model(m, stored->padded_vocab);
        fmt::print("{}: {} {} checkpoint, {} parameters, L={} C={} NH={} V={} Vp={} maxT={}\n",
                   file, stored->format, m.type,
                   format_count(double(hybrid::engine::ModuleTree(*model).param_count())),
                   m.n_layer, m.n_embd, m.n_head, m.vocab_size, stored->padded_vocab, m.seq_len);
      } else {
        // Anything else is read as a token shard, whose checks name what is wrong.
        const MappedTokenShard shard(file);
        uint32_t max_token = 0;
        for (int64_t i = 0; i < shard.size(); ++i) max_token = std::max(max_token, shard.at(i));
        fmt::print(
            "{}: llm.c token shard (version {}, {}-bit tokens), {} tokens, largest token {}\n",
            file, shard.token_bytes() == 2 ? kTokenShardVersion16 : kTokenShardVersion32,
            8 * shard.token_bytes(), format_count(double(shard.size())), max_token);
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "hybrid-data: {}\n", e.what());
      status = 1;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hybrid-data: write and inspect llm.c-format token shards and checkpoints, train "
      "tokenizers, tokenize text"};
  app.require_subcommand(1);

  SynthOptions so;
  CLI::App* synth = app.add_subcommand(
      "synth",
      "Write synthetic llm.c token shards (a sparse random Markov chain: learnable structure)");
  synth->add_option("--out", so.out, "Output directory (created if needed)")->required();
  synth->add_option("--tokens", so.tokens, "Training tokens to write")
      ->required()
      ->check(hybrid::base::at_least(1));
  synth->add_option("--vocab", so.vocab, "Vocabulary size (2..65536)")
      ->required()
      ->check(hybrid::base::between(2, 65536));
  synth->add_option("--seed", so.seed, "Seed of the chain and the streams")->capture_default_str();
  synth->add_option("--shard-tokens", so.shard_tokens, "Tokens per shard file")
      ->capture_default_str()
      ->check(hybrid::base::between(1, INT32_MAX));
  synth
      ->add_option("--val-tokens", so.val_tokens,
                   "Validation tokens (default: a tenth of --tokens; 0: none)")
      ->check(hybrid::base::at_least(0));
  synth->add_option("--branching", so.branching, "Likely successors per token")
      ->capture_default_str();
  synth->add_option("--noise", so.noise, "Probability of a uniform random next token, in (0, 1]")
      ->capture_default_str();

  std::vector<std::string> info_files;
  CLI::App* info =
      app.add_subcommand("info", "Validate token shards and checkpoints, print what they hold");
  info->add_option("files", info_files, "Files to inspect")->required();

  hybrid::data_tool::TrainTokenizerCommand train_tokenizer(app);
  hybrid::data_tool::TokenizeCommand tokenize(app);

  if (auto status = hybrid::base::parse_command_line(app, argc, argv, 1)) return *status;
  try {
    if (train_tokenizer.chosen()) return train_tokenizer.run();
    if (*synth) return run_synth(so);
    if (*info) return run_info(info_files);
    if (tokenize.chosen()) return tokenize.run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "hybrid-data: {}\n", e.what());
    return 1;
  }
  return 0;
}
