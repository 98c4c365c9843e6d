// hybrid-data train-tokenizer: a SentencePiece model trained on the user's text
// (engine/data/tokenizer/sentencepiece_training.h does the work).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/data/tokenizer/sentencepiece_training.h"

namespace hybrid::data_tool {

class TrainTokenizerCommand {
 public:
  explicit TrainTokenizerCommand(CLI::App& app);
  bool chosen() const { return bool(*command_); }
  // Trains, writes the model and prints one summary line; throws on failure.
  int run() const;

 private:
  CLI::App* command_ = nullptr;
  std::string type_ = "unigram";
  std::string out_;
  std::vector<std::string> files_;
  engine::SentencePieceTrainingOptions options_;
};

}  // namespace hybrid::data_tool
