// One swap file of the NVMe offload (ZeRO-Infinity): a preallocated file under
// the config's nvme_path that holds one buffer of a layout (parameters, master
// weights or optimizer state of this rank). Its name is removed as soon as it is
// open, so the file lives exactly as long as the process holds it: nothing is
// left under nvme_path after any exit, SIGKILL included.
//
// Direct I/O (O_DIRECT) bypasses the page cache, so the offloaded bytes do not
// come back as host memory in disguise; it needs offsets, sizes and buffer
// addresses aligned to kDirectAlignment, and some filesystems (tmpfs) refuse it.
// So the file is opened twice: once with O_DIRECT when the filesystem accepts it
// (checked by an aligned probe write), once without; fd_for() picks the direct
// descriptor for aligned transfers and the buffered one otherwise. Linux keeps
// the two views coherent (direct I/O writes back and drops cached pages of its range).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hybrid::engine::io {

// Alignment of offsets, sizes and buffers for direct I/O: the largest logical
// block size of common devices (4Kn NVMe), so it holds everywhere.
constexpr size_t kDirectAlignment = 4096;

inline uint64_t align_up(uint64_t n, uint64_t a = kDirectAlignment) { return (n + a - 1) / a * a; }
inline uint64_t align_down(uint64_t n, uint64_t a = kDirectAlignment) { return n / a * a; }

class SwapFile {
 public:
  // Creates `dir`/`name` (exclusively), preallocated to `bytes` rounded up to
  // kDirectAlignment. `key` is the config key that named dir, for the errors:
  // ConfigError when dir is missing, not a directory or not writable; a
  // std::runtime_error naming the file and the bytes when the filesystem has
  // less free space than the file needs.
  SwapFile(const std::string& dir, const std::string& key, const std::string& name, uint64_t bytes);
  ~SwapFile();  // closes the file (its space is freed)
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;

  const std::string& path() const { return path_; }  // for messages: the name is gone
  uint64_t size() const { return size_; }            // bytes allocated (aligned)
  bool direct() const { return direct_fd_ >= 0; }
  // The descriptor for one transfer: the direct one when offset, size and buffer
  // are aligned and the filesystem allows it, else the buffered one.
  int fd_for(uint64_t offset, const void* buf, size_t bytes) const;
  // The file's length as the filesystem reports it (fstat): the measured bytes.
  uint64_t size_on_disk() const;

 private:
  void close_and_remove() noexcept;

  std::string path_;
  uint64_t size_ = 0;
  int fd_ = -1;
  int direct_fd_ = -1;
  bool named_ = true;  // the directory entry still exists (until the constructor ends)
};

// The config's nvme_path must be an existing, writable directory; ConfigError
// naming `key` and the path otherwise.
void check_swap_dir(const std::string& dir, const std::string& key);

}  // namespace hybrid::engine::io
