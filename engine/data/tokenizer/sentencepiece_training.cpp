#include "engine/data/tokenizer/sentencepiece_training.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <thread>
#include <unordered_map>

#include "base/atomic_file.h"
#include "base/output_path.h"
#include "engine/data/data_file_error.h"
#include "engine/data/text_documents.h"
#include "engine/data/tokenizer/sentencepiece_status.h"

namespace hybrid::engine {

namespace {

// The corpus as the library's sentence stream: each document's lines, empty ones
// skipped, long ones cut. A read error ends the stream; the trainer then fails
// and train_sentencepiece rethrows the error itself.
class CorpusSentences final : public sentencepiece::SentenceIterator {
 public:
  explicit CorpusSentences(const std::vector<std::string>& files) : reader_(files) { advance(); }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return sentence_; }
  sentencepiece::util::Status status() const override {
    if (!error_) return {};
    return {sentencepiece::util::StatusCode::kDataLoss, "reading the corpus failed"};
  }

  void rethrow_if_failed() const {
    if (error_) std::rethrow_exception(error_);
  }
  int64_t documents() const { return reader_.documents_read(); }
  int64_t sentences() const { return sentences_; }
  int64_t bytes() const { return bytes_; }

 private:
  void advance() {
    try {
      done_ = !next_sentence();
    } catch (...) {
      error_ = std::current_exception();
      done_ = true;
    }
  }

  bool next_sentence() {
    for (;;) {
      if (pos_ < document_.size()) {
        if (take_line_part()) return true;
        continue;
      }
      if (!reader_.next(document_)) return false;
      bytes_ += int64_t(document_.size());
      pos_ = 0;
    }
  }

  // The next part of the current line into sentence_; false when it is empty.
  bool take_line_part() {
    size_t end = document_.find('\n', pos_);
    if (end == std::string::npos) end = document_.size();
    size_t length = end - pos_;
    if (length > size_t(kSentencePieceMaxSentenceBytes)) {
      length = kSentencePieceMaxSentenceBytes;
      // Cut before a UTF-8 continuation byte, never inside a character.
      while (length > 1 && (static_cast<unsigned char>(document_[pos_ + length]) & 0xC0) == 0x80)
        --length;
    }
    sentence_.assign(document_, pos_, length);
    pos_ += length;
    if (pos_ == end) ++pos_;  // past the newline
    if (sentence_.empty()) return false;
    ++sentences_;
    return true;
  }

  TextDocuments reader_;
  std::string document_;
  size_t pos_ = 0;
  std::string sentence_;
  bool done_ = false;
  std::exception_ptr error_;
  int64_t sentences_ = 0;
  int64_t bytes_ = 0;
};

std::unordered_map<std::string, std::string> trainer_arguments(
    const SentencePieceTrainingOptions& o) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return {
      {"model_type", sentencepiece_type_name(o.type)},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"num_threads", std::to_string(o.threads > 0 ? unsigned(o.threads) : cores)},
      // Text as it is: no NFKC, no collapsing or trimming of spaces.
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"split_digits", "true"},
      // Characters outside the covered 99.95% (and any never seen) become bytes.
      {"byte_fallback", "true"},
      {"character_coverage", "0.9995"},
      {"max_sentence_length", std::to_string(kSentencePieceMaxSentenceBytes)},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"unk_piece", "<unk>"},
      {"bos_piece", "<s>"},
      {"eos_piece", "</s>"},
      {"hard_vocab_limit", "true"},
      // Global to the library: INFO and up with --verbose, else errors only
      // (which come back as the status we report).
      {"minloglevel", o.verbose ? "0" : "2"},
  };
}

std::string vocab_listing(const sentencepiece::SentencePieceProcessor& model) {
  std::string text;
  for (int id = 0; id < model.GetPieceSize(); ++id)
    text += fmt::format("{}\t{}\n", model.IdToPiece(id), model.GetScore(id));
  return text;
}

std::string name_files(const std::vector<std::string>& files) {
  if (files.size() <= 3) return fmt::format("{}", fmt::join(files, ", "));
  return fmt::format("{}, {}, {} and {} more", files[0], files[1], files[2], files.size() - 3);
}

void count_pieces(const sentencepiece::SentencePieceProcessor& model,
                  SentencePieceTrainingSummary& s) {
  s.vocab_size = model.GetPieceSize();
  for (int id = 0; id < s.vocab_size; ++id) {
    if (model.IsByte(id))
      ++s.byte_pieces;
    else if (model.IsControl(id) || model.IsUnknown(id))
      ++s.special_pieces;
    else
      ++s.learned_pieces;
  }
}

}  // namespace

const char* sentencepiece_type_name(SentencePieceType type) {
  return type == SentencePieceType::kBpe ? "bpe" : "unigram";
}

SentencePieceTrainingSummary train_sentencepiece(const std::vector<std::string>& files,
                                                 const std::string& out_model,
                                                 const SentencePieceTrainingOptions& options) {
  namespace fs = std::filesystem;
  if (const std::string why = base::why_not_writable_file(out_model); !why.empty())
    throw DataFileError(fmt::format("{}: cannot write the model: {}", out_model, why));
  const auto t0 = std::chrono::steady_clock::now();
  CorpusSentences sentences(files);
  sentences.rethrow_if_failed();
  if (sentences.done())
    throw TokenizerTrainingError(fmt::format("empty corpus: no text in {}", name_files(files)));

  std::string model_bytes;
  const auto status = sentencepiece::SentencePieceTrainer::Train(trainer_arguments(options),
                                                                 &sentences, &model_bytes);
  sentences.rethrow_if_failed();
  if (!status.ok())
    throw TokenizerTrainingError(
        fmt::format("cannot train a {} vocabulary of {} tokens on {} ({} document{}): {}",
                    sentencepiece_type_name(options.type), options.vocab_size, name_files(files),
                    sentences.documents(), sentences.documents() == 1 ? "" : "s",
                    sentencepiece_status_text(status)));

  sentencepiece::SentencePieceProcessor model;
  if (const auto loaded = model.LoadFromSerializedProto(model_bytes); !loaded.ok())
    throw TokenizerTrainingError("the trained model does not load: " + loaded.ToString());
  if (fs::path(out_model).extension() == ".model")
    base::write_file_atomic(fs::path(out_model).replace_extension(".vocab"), vocab_listing(model));
  base::write_file_atomic(out_model, model_bytes);

  SentencePieceTrainingSummary summary;
  count_pieces(model, summary);
  summary.documents = sentences.documents();
  summary.sentences = sentences.sentences();
  summary.bytes = sentences.bytes();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return summary;
}

}  // namespace hybrid::engine
