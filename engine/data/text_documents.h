// Documents of a text corpus, in a fixed order: plain text files (one document
// each), JSONL files (`.jsonl`: one document a line, its "text" field) and
// folders (every regular file below them, hidden ones aside, in byte order of
// their paths). Read in batches so that memory stays bounded by the batch,
// whatever the corpus' size.
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

  // Appends the next documents to `out` until at least `max_bytes` of text or
  // the corpus' end; false when nothing was left. A JSONL line that is not an
  // object with a string "text" is a DataFileError naming the file and line.
  bool next_batch(std::vector<std::string>& out, uint64_t max_bytes);

 private:
  bool next_document(std::string& doc);
  void open_next_file();

  std::vector<std::string> files_;
  uint64_t total_bytes_ = 0, bytes_read_ = 0;
  size_t next_file_ = 0;
  std::ifstream file_;  // the file being read (a JSONL one line by line)
  std::string path_;
  int64_t line_ = 0;
};

}  // namespace hybrid::engine
