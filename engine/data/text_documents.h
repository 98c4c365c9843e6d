// Documents of a text corpus, in a fixed order: plain text files (one document
// each, its bytes as they are), JSONL files (`.jsonl`: one document a line, its
// "text" field; blank lines skipped) and folders (every regular file below
// them, hidden ones aside, in byte order of their paths). Files are read one at a
// time and a JSONL file a line at a time, so memory stays bounded by the largest
// document (or the batch asked for).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace hybrid::engine {

class TextDocuments {
 public:
  // Expands folders and checks that every input exists; throws DataFileError
  // naming the path otherwise, or when no file is left.
  explicit TextDocuments(const std::vector<std::string>& inputs);

  const std::vector<std::string>& files() const { return files_; }
  uint64_t total_bytes() const { return total_bytes_; }  // of every file, for progress
  uint64_t bytes_read() const { return bytes_read_; }
  int64_t documents_read() const { return documents_; }

  // Puts the next document into `doc`; false after the last one. A JSONL line
  // that is not an object with a string "text" is a DataFileError naming the
  // file and line.
  bool next(std::string& doc);
  // Appends the next documents to `out` until at least `max_bytes` of text or
  // the corpus' end; false when nothing was left.
  bool next_batch(std::vector<std::string>& out, uint64_t max_bytes);

 private:
  bool next_jsonl_document(std::string& doc);

  std::vector<std::string> files_;
  uint64_t total_bytes_ = 0, bytes_read_ = 0;
  int64_t documents_ = 0;
  size_t next_file_ = 0;
  std::ifstream jsonl_;  // the JSONL file being read, line by line
  std::string jsonl_path_;
  int64_t line_ = 0;
};

// Whether `path` is read as JSONL (its name ends in ".jsonl").
bool is_jsonl_file(const std::string& path);

// The bytes of a file. Throws DataFileError naming it when it is missing, a
// directory or cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace hybrid::engine
