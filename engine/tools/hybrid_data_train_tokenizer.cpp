#include "engine/tools/hybrid_data_train_tokenizer.h"

#include <fmt/format.h>

#include "base/cli_checks.h"
#include "base/units.h"

namespace hybrid::data_tool {

TrainTokenizerCommand::TrainTokenizerCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "train-tokenizer",
      "Train a SentencePiece tokenizer (.model, read by the sentencepiece library and "
      "Hugging Face's LlamaTokenizer) on plain text files (one document each) and JSONL "
      "files (a \"text\" field a line)");
  command_->add_option("--type", type_, "Model: unigram or bpe")
      ->capture_default_str()
      ->check(CLI::IsMember({"unigram", "bpe"}));
  command_
      ->add_option("--vocab", options_.vocab_size,
                   "Vocabulary size, special (3) and byte (256) pieces included")
      ->required()
      ->check(base::between(1, 1 << 24));
  command_->add_option("--out", out_, "The .model file to write (and the .vocab beside it)")
      ->required();
  command_->add_option("--threads", options_.threads, "Training threads (default: every core)")
      ->check(base::at_least(1));
  command_->add_flag("--verbose", options_.verbose, "Show SentencePiece's own training log");
  command_->add_option("files", files_, "Text (.txt, ...) and JSONL (.jsonl) files")->required();
}

int TrainTokenizerCommand::run() const {
  engine::SentencePieceTrainingOptions o = options_;
  o.type = type_ == "bpe" ? engine::SentencePieceType::kBpe : engine::SentencePieceType::kUnigram;
  const engine::SentencePieceTrainingSummary s = engine::train_sentencepiece(files_, out_, o);
  fmt::print(
      "wrote {}: SentencePiece {}, {} tokens ({} learned, {} bytes, {} special) from {} "
      "document{} ({}, {} lines) in {}\n",
      out_, engine::sentencepiece_type_name(o.type), s.vocab_size, s.learned_pieces, s.byte_pieces,
      s.special_pieces, s.documents, s.documents == 1 ? "" : "s",
      base::format_bytes(uint64_t(s.bytes)), s.sentences, base::format_duration(s.seconds));
  return 0;
}

}  // namespace hybrid::data_tool
