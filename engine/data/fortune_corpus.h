// The fortune cookies of Debian's `fortunes` (English) and `fortunes-de`
// (German) packages as documents: real text that scripts/setup.sh installs,
// for the tokenizer's tests and benchmark and the examples. The files are the
// regular files of a folder (no links, no .dat index), sorted by path; a
// document is the text between lines that hold only "%", newlines kept.
#pragma once

#include <string>
#include <vector>

namespace hybrid::engine {

inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

struct FortuneFile {
  std::string path;
  std::string text;
  std::vector<std::string> documents;
};

// The fortune files of `dirs` (each folder alone, not its subfolders), sorted by
// path. Throws DataFileError naming a folder that cannot be read.
std::vector<FortuneFile> read_fortune_files(const std::vector<std::string>& dirs);

// The documents of one fortune file's text.
std::vector<std::string> fortune_documents(const std::string& text);

}  // namespace hybrid::engine
