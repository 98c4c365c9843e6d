// The documents of a text corpus, as hybrid-data reads them: a plain text file is
// one document (its bytes as they are); a `.jsonl` file holds one document a
// line, the string in its "text" field (blank lines are skipped). Files are read
// one at a time and a JSONL file a line at a time, so memory stays bounded by the
// largest document.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace hybrid::engine {

class TextDocumentReader {
 public:
  explicit TextDocumentReader(std::vector<std::string> files);

  // Puts the next document into `text`; false after the last one. Throws
  // DataFileError naming the file (and, in a JSONL file, the line number) that
  // cannot be read: missing, a directory, a line that is not a JSON object with
  // a string "text".
  bool next(std::string& text);

  int64_t documents_read() const { return documents_; }

 private:
  void open_next_file();
  bool next_jsonl_document(std::string& text);

  std::vector<std::string> files_;
  size_t next_file_ = 0;
  std::string current_;  // the JSONL file being read, "" between files
  std::ifstream jsonl_;
  int64_t line_number_ = 0;
  int64_t documents_ = 0;
};

// Whether `path` is read as JSONL (its name ends in ".jsonl").
bool is_jsonl_file(const std::string& path);

// The bytes of a file. Throws DataFileError naming it when it is missing, a
// directory or cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace hybrid::engine
