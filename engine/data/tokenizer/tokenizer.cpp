#include "engine/data/tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "engine/data/data_file_error.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer.model"};

// tokenizer.json is JSON; a SentencePiece model is a protobuf, which never
// starts with '{' (its first byte is a field tag).
bool looks_like_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  return in && c == '{';
}

}  // namespace

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const char* name : kTokenizerFiles) {
      const fs::path file = fs::path(path) / name;
      if (fs::is_regular_file(file, ec)) return open_tokenizer(file.string());
    }
    throw DataFileError(fmt::format(
        "{}: no tokenizer in this folder (looked for tokenizer.json and tokenizer.model)", path));
  }
  if (!fs::is_regular_file(path, ec))
    throw DataFileError(fmt::format("{}: no such tokenizer file", path));
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".json" || (ext != ".model" && looks_like_json(path)))
    return load_byte_level_bpe(path);
  return load_sentencepiece(path);
}

bool folder_holds_tokenizer(const std::string& path) {
  std::error_code ec;
  for (const char* name : kTokenizerFiles)
    if (fs::is_regular_file(fs::path(path) / name, ec)) return true;
  return false;
}

}  // namespace hybrid::engine
