// `hybrid-data tokenize`: a text corpus (engine/data/text_documents.h) through a
// tokenizer into llm.c token shards, DIR/train_NNNNNN.bin and DIR/val_NNNNNN.bin.
// Each document is preceded by the end-of-text token, as llm.c's data scripts
// write them, so that loaders find the boundaries. Documents are encoded on
// several threads, written in input order: the shards are the same bytes
// whatever the thread count. The output appears at once: shards are written into
// a hidden folder beside DIR that is renamed to DIR at the end, so a killed run
// leaves no shard in DIR.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/data/tokenizer/tokenizer.h"

namespace hybrid::engine {

struct TokenizeOptions {
  std::string out_dir;                 // must not exist, or be an empty folder
  double val_fraction = 0;             // of the documents, spread evenly; 0: every one to train
  int64_t shard_tokens = 100'000'000;  // llm.c's FineWeb shards hold 100M tokens
  int token_bytes = 0;                 // 2 or 4; 0: what the vocabulary needs
  int threads = 0;                     // 0: every core
  uint64_t batch_bytes = 16u << 20;    // text read and encoded at once (bounds memory)
};

struct TokenizeProgress {
  uint64_t bytes_read = 0, bytes_total = 0;
  int64_t documents = 0, tokens = 0;
  double seconds = 0;
};

struct TokenizeSummary {
  int64_t documents = 0, empty_documents = 0;  // empty ones are skipped
  int64_t train_documents = 0, val_documents = 0;
  int64_t train_tokens = 0, val_tokens = 0;  // the end-of-text tokens included
  uint64_t text_bytes = 0;
  int token_bytes = 2;
  std::vector<std::string> files;  // as they are in out_dir
  double seconds = 0;
};

// Whether document `index` (0-based, empty documents not counted) goes to
// validation: floor((index + 1) f) > floor(index f), so that every 1/f-th
// document does and any prefix of n documents sends floor(n f) of them.
bool is_validation_document(int64_t index, double val_fraction);

// Throws DataFileError naming the file at fault (an input, a JSONL line, the
// output folder), std::invalid_argument for options and a tokenizer that cannot
// serve (no end-of-text token, ids wider than token_bytes); nothing is left in
// out_dir then.
TokenizeSummary tokenize_corpus(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                                const TokenizeOptions& options,
                                const std::function<void(const TokenizeProgress&)>& progress = {});

}  // namespace hybrid::engine
