// Training a SentencePiece model on the user's corpus (hybrid-data
// train-tokenizer), with the settings under which decode(encode(x)) == x for
// every valid UTF-8 x without U+2581 (SentencePiece's space mark, docs/text.md):
// identity normalization, whitespace kept as it is, byte fallback (every byte
// has a piece), digits split. Special tokens are Llama's:
// <unk> 0, <s> 1 (bos), </s> 2 (eos), no padding token. docs/text.md has the
// whole list and why.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hybrid::engine {

// The corpus cannot give the vocabulary asked for (empty, or too small for it).
class TokenizerTrainingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class SentencePieceType { kUnigram, kBpe };

struct SentencePieceTrainingOptions {
  SentencePieceType type = SentencePieceType::kUnigram;
  int vocab_size = 0;    // every piece: special, byte and learned ones
  int threads = 0;       // 0: every core
  bool verbose = false;  // the library's own log on stderr
};

struct SentencePieceTrainingSummary {
  int vocab_size = 0;
  int learned_pieces = 0;  // neither special nor byte pieces
  int byte_pieces = 0;
  int special_pieces = 0;
  int64_t documents = 0;
  int64_t sentences = 0;  // the lines the library trained on
  int64_t bytes = 0;      // of the documents
  double seconds = 0;
};

// Lines longer than this are cut into parts of at most this many bytes (at a
// character boundary) before the library sees them: it would skip them whole.
inline constexpr int kSentencePieceMaxSentenceBytes = 16384;

// Trains on `files` (text_documents.h: plain text files, one document each, or
// JSONL with a "text" field a line; documents are fed a line at a time, as
// spm_train reads its input) and writes `out_model` atomically; a name ending
// in ".model" also gets the ".vocab" listing (piece, score) beside it. Nothing
// is written when training fails. Throws DataFileError naming the input file
// (and line) at fault or an output that cannot be written, TokenizerTrainingError
// for an empty corpus or a vocabulary it cannot reach (the library's words).
SentencePieceTrainingSummary train_sentencepiece(const std::vector<std::string>& files,
                                                 const std::string& out_model,
                                                 const SentencePieceTrainingOptions& options);

const char* sentencepiece_type_name(SentencePieceType type);  // "unigram", "bpe"

}  // namespace hybrid::engine
