// hybrid-data tokenize --tokenizer FILE|DIR --out DIR [--val-fraction F]
//     [--threads N] [--shard-tokens M] [--token-bytes 2|4] FILES...
// Text files, JSONL files and folders into llm.c token shards
// (engine/data/tokenize_corpus.h), with a progress bar on stderr.
#include "engine/tools/hybrid_data_tokenize.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "base/cli_checks.h"
#include "base/units.h"
#include "engine/data/tokenizer/tokenizer.h"

namespace hybrid::data_tool {

using base::format_bytes;
using base::format_count;
using base::format_duration;

TokenizeCommand::TokenizeCommand(CLI::App& app) {
  CLI::App* cmd = command_ = app.add_subcommand(
      "tokenize",
      "Tokenize text files (one document each), JSONL files (a \"text\" field a line) and "
      "folders into llm.c token shards, each document after the end-of-text token");
  cmd->add_option("--tokenizer", tokenizer_,
                  "tokenizer.json, a SentencePiece .model, or a folder holding one")
      ->required();
  cmd->add_option("--out", options_.out_dir, "Output folder (must not exist, or be empty)")
      ->required();
  cmd->add_option("--val-fraction", options_.val_fraction,
                  "Fraction of the documents for val_*.bin, spread evenly (0: all to train)")
      ->capture_default_str();
  cmd->add_option("--threads", options_.threads, "Encoding threads (default: every core)")
      ->check(base::at_least(1));
  cmd->add_option("--shard-tokens", options_.shard_tokens, "Tokens per shard file")
      ->capture_default_str()
      ->check(base::between(1, INT32_MAX));
  cmd->add_option("--token-bytes", options_.token_bytes,
                  "2 (uint16, llm.c version 1) or 4 (uint32, version 2); default: what the "
                  "vocabulary needs")
      ->check(CLI::IsMember({2, 4}));
  cmd->add_option("files", inputs_, "Text files, .jsonl files and folders")->required();
}

namespace {

void print_progress(const engine::TokenizeProgress& p, bool tty) {
  const double fraction = p.bytes_total ? double(p.bytes_read) / double(p.bytes_total) : 1.0;
  const double rate = p.seconds > 0 ? double(p.bytes_read) / p.seconds : 0.0;
  const double eta = fraction > 0 ? p.seconds * (1 - fraction) / fraction : 0.0;
  constexpr int kWidth = 24;
  const int filled = int(fraction * kWidth + 0.5);
  fmt::print(stderr, "{}tokenize [{}{}] {:5.1f}%  {}/s  {} documents  {} tokens  ETA {}{}",
             tty ? "\r" : "", std::string(size_t(filled), '#'),
             std::string(size_t(kWidth - filled), ' '), 100 * fraction,
             format_bytes(uint64_t(rate)), format_count(double(p.documents)),
             format_count(double(p.tokens)), format_duration(eta), tty ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace

int TokenizeCommand::run() const {
  const auto tokenizer = engine::open_tokenizer(tokenizer_);
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  double last = -1;
  const auto s = engine::tokenize_corpus(
      *tokenizer, inputs_, options_, [&](const engine::TokenizeProgress& p) {
        // A few updates a second on a terminal, one every few
        // seconds in a log; the first and the last always.
        const bool end = p.bytes_read >= p.bytes_total;
        if (last >= 0 && !end && p.seconds - last < (tty ? 0.2 : 5.0)) return;
        last = p.seconds;
        print_progress(p, tty);
      });
  if (tty && last >= 0) fmt::print(stderr, "\n");
  fmt::print("tokenizer: {}\n", tokenizer->describe());
  fmt::print("{} documents ({} of text, {} empty skipped) in {}: {}/s\n",
             format_count(double(s.documents)), format_bytes(s.text_bytes), s.empty_documents,
             format_duration(s.seconds),
             format_bytes(uint64_t(s.seconds > 0 ? double(s.text_bytes) / s.seconds : 0)));
  fmt::print("train: {} documents, {} tokens; val: {} documents, {} tokens ({}-bit tokens)\n",
             s.train_documents, s.train_tokens, s.val_documents, s.val_tokens, 8 * s.token_bytes);
  fmt::print("wrote {} shards to {}\n", s.files.size(), options_.out_dir);
  return 0;
}

}  // namespace hybrid::data_tool
