// hybrid-data's subcommands that live in their own files (tools/hybrid_data_*.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/data/tokenize_corpus.h"

namespace hybrid::tools {

struct TokenizeCommand {
  std::string tokenizer;
  std::vector<std::string> inputs;
  engine::TokenizeOptions options;
};
CLI::App* add_tokenize_command(CLI::App& app, TokenizeCommand& c);
int run_tokenize(const TokenizeCommand& c);

}  // namespace hybrid::tools
