// Writes a file so that readers see either the old file or the complete new one:
// data goes to a temporary file beside the target, which is fsync'ed and renamed
// over it on commit(). Destroyed without commit(), the temporary file is removed.
#pragma once

#include <cstddef>
#include <string>

namespace hybrid::engine {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);  // throws DataFileError naming the path
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t bytes);
  void commit();  // fsync, rename over the target, fsync the directory

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace hybrid::engine
