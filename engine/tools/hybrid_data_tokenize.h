// hybrid-data tokenize: text files, JSONL files and folders into llm.c token
// shards (engine/data/tokenize_corpus.h does the work).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/data/tokenize_corpus.h"

namespace hybrid::data_tool {

class TokenizeCommand {
 public:
  explicit TokenizeCommand(CLI::App& app);
  bool chosen() const { return bool(*command_); }
  // Tokenizes with a progress bar on stderr and a summary on stdout; throws on failure.
  int run() const;

 private:
  CLI::App* command_ = nullptr;
  std::string tokenizer_;
  std::vector<std::string> inputs_;
  engine::TokenizeOptions options_;
};

}  // namespace hybrid::data_tool
