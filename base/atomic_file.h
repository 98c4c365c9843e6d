// Writing files so that a reader sees either the old file or the complete new
// one, also after a crash or power loss: data goes to a temporary file beside the
// target ("<target>.tmp.<pid>.<n>"), which is fsync'ed and renamed over it, and the
// folder is fsync'ed so the rename itself is durable. Destroyed without commit(),
// the temporary is removed; one left by a killed process (SIGKILL, OOM killer) is
// removed by the next writer of the same target once no process on this host has
// that pid (a target has one writer at a time, also on a shared filesystem).
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hybrid::base {

// A file that cannot be read or written; the message starts with its path.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AtomicFileWriter {
 public:
  // Creates missing parent folders. Throws FileError naming the path.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();  // fsync, rename over the target, fsync the folder

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole content at once, through AtomicFileWriter.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Removes `path` (if there) and fsyncs its folder, so that the removal is on disk
// before whatever the caller writes next. Throws FileError naming the path.
void remove_file_durably(const std::filesystem::path& path);

}  // namespace hybrid::base
