#include "base/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hybrid::base {

namespace {

[[noreturn]] void raise(const std::string& path, const char* what, int err) {
  throw FileError(fmt::format("{}: cannot {}: {}", path, what, std::strerror(err)));
}

std::filesystem::path parent_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
}

void fsync_folder(const std::filesystem::path& folder) {
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

// Temporaries of `target` whose writer process is gone: a killed writer's
// leftovers (a checkpoint partition's can be gigabytes). A pid that exists
// (perhaps reused) keeps its file; a live writer's pid always exists.
void remove_dead_writers_temporaries(const std::string& target) {
  const std::filesystem::path t(target);
  const std::string prefix = t.filename().string() + ".tmp.";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent_of(target), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>.<n>"
    const size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos ||
        rest.find_first_not_of("0123456789.") != std::string::npos)
      continue;
    const long pid = std::strtol(rest.c_str(), nullptr, 10);
    if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
      std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::create_directories(parent_of(path_), ec);
  if (ec)
    throw FileError(fmt::format("{}: cannot create folder {}: {}", path_, parent_of(path_).string(),
                                ec.message()));
  remove_dead_writers_temporaries(path_);
  // pid + counter: concurrent writers (ranks, threads) never share a temporary file.
  static std::atomic<unsigned> counter{0};
  temp_path_ = fmt::format("{}.tmp.{}.{}", path_, ::getpid(), counter.fetch_add(1));
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) raise(path_, "create a temporary file", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      raise(path_, "write", errno);
    }
    p += n;
    bytes -= size_t(n);
  }
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) raise(path_, "fsync", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) raise(path_, "close", errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
    raise(path_, "move the temporary file into place", errno);
  committed_ = true;
  fsync_folder(parent_of(path_));
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  AtomicFileWriter w(path.string());
  w.write(content);
  w.commit();
}

void remove_file_durably(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return;
    raise(path.string(), "remove", errno);
  }
  fsync_folder(parent_of(path.string()));
}

}  // namespace hybrid::base
