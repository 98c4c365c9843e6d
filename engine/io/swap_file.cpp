#include "engine/io/swap_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "base/units.h"
#include "engine/config/config.h"

namespace hybrid::engine::io {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Whether direct I/O really works on fd: some filesystems accept O_DIRECT at
// open and refuse the transfer itself (EINVAL).
bool direct_write_works(int fd) {
  void* block = std::aligned_alloc(kDirectAlignment, kDirectAlignment);
  if (!block) return false;
  std::memset(block, 0, kDirectAlignment);
  const bool ok = ::pwrite(fd, block, kDirectAlignment, 0) == ssize_t(kDirectAlignment);
  std::free(block);
  return ok;
}

}  // namespace

void check_swap_dir(const std::string& dir, const std::string& key) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw ConfigError(fmt::format("config: {} \"{}\" cannot be used: {}", key, dir,
                                  errno == ENOENT ? "no such directory" : errno_text(errno)));
  if (!S_ISDIR(st.st_mode))
    throw ConfigError(fmt::format("config: {} \"{}\" is not a directory", key, dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(
        fmt::format("config: {} \"{}\" is not writable: {}", key, dir, errno_text(errno)));
}

SwapFile::SwapFile(const std::string& dir, const std::string& key, const std::string& name,
                   uint64_t bytes)
    : path_(dir + "/" + name), size_(align_up(bytes)) {
  check_swap_dir(dir, key);
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = uint64_t(vfs.f_bavail) * uint64_t(vfs.f_frsize);
    if (size_ > free_bytes)
      throw std::runtime_error(fmt::format(
          "nvme: not enough space for {} ({}): it needs {} bytes ({}), {} has {} bytes free", path_,
          key, size_, base::format_bytes(size_), dir, free_bytes));
  }
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    const int e = errno;
    if (e == EACCES || e == EROFS || e == EPERM)
      throw ConfigError(fmt::format("config: {} \"{}\" is not writable: cannot create {}: {}", key,
                                    dir, path_, errno_text(e)));
    throw std::runtime_error(fmt::format("nvme: cannot create {}: {}", path_, errno_text(e)));
  }
  try {
    // Reserve the space now, so that running out of it is an error here, not
    // in the middle of a step.
    if (size_ > 0) {
      int rc = ::fallocate(fd_, 0, 0, off_t(size_));
      if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) rc = ::ftruncate(fd_, off_t(size_));
      if (rc != 0) {
        const int e = errno;
        throw std::runtime_error(fmt::format("nvme: cannot allocate {} bytes ({}) for {}: {}",
                                             size_, base::format_bytes(size_), path_,
                                             errno_text(e)));
      }
    }
    direct_fd_ = ::open(path_.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    if (direct_fd_ >= 0 && size_ > 0 && !direct_write_works(direct_fd_)) {
      ::close(direct_fd_);
      direct_fd_ = -1;
    }
    // Both descriptors are open: the name can go. The space stays reserved until
    // the last descriptor closes, which the kernel does even when the process is
    // killed, so no run (crashed, OOM-killed, SIGKILLed) leaves swap files behind.
    if (::unlink(path_.c_str()) != 0)
      throw std::runtime_error(fmt::format("nvme: cannot unlink {}: {}", path_, errno_text(errno)));
    named_ = false;
  } catch (...) {
    close_and_remove();
    throw;
  }
}

SwapFile::~SwapFile() { close_and_remove(); }

void SwapFile::close_and_remove() noexcept {
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) {
    ::close(fd_);
    if (named_) ::unlink(path_.c_str());
  }
  direct_fd_ = fd_ = -1;
}

int SwapFile::fd_for(uint64_t offset, const void* buf, size_t bytes) const {
  const bool aligned = offset % kDirectAlignment == 0 && bytes % kDirectAlignment == 0 &&
                       reinterpret_cast<uintptr_t>(buf) % kDirectAlignment == 0;
  return aligned && direct_fd_ >= 0 ? direct_fd_ : fd_;
}

uint64_t SwapFile::size_on_disk() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    throw std::runtime_error(fmt::format("nvme: cannot stat {}: {}", path_, errno_text(errno)));
  return uint64_t(st.st_size);
}

}  // namespace hybrid::engine::io
