#include "engine/data/token_shard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "base/atomic_file.h"
#include "engine/data/data_file_error.h"

namespace hybrid::engine {

void write_token_shard(const std::string& path, std::span<const uint16_t> tokens) {
  if (tokens.empty())
    throw DataFileError(fmt::format("{}: refusing to write an empty token shard", path));
  if (tokens.size() > size_t(INT32_MAX))
    throw DataFileError(fmt::format(
        "{}: {} tokens do not fit one shard (the header's count is int32)", path, tokens.size()));
  std::array<int32_t, kTokenShardHeaderInts> header{};
  header[0] = kTokenShardMagic;
  header[1] = kTokenShardVersion;
  header[2] = int32_t(tokens.size());
  base::AtomicFileWriter out(path);
  out.write(header.data(), sizeof(header));
  out.write(tokens.data(), tokens.size_bytes());
  out.commit();
}

namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedTokenShard::MappedTokenShard(const std::string& path) : path_(path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    throw DataFileError(fmt::format("{}: cannot open token shard: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw DataFileError(fmt::format("{}: not a regular file", path));
  const uint64_t file_bytes = uint64_t(st.st_size);
  if (file_bytes < kTokenShardHeaderBytes)
    throw DataFileError(
        fmt::format("{}: too small for a token shard ({} bytes; the header alone is {} bytes)",
                    path, file_bytes, kTokenShardHeaderBytes));
  std::array<int32_t, kTokenShardHeaderInts> header{};
  if (::pread(f.fd, header.data(), sizeof(header), 0) != ssize_t(sizeof(header)))
    throw DataFileError(fmt::format("{}: cannot read the shard header", path));
  if (header[0] != kTokenShardMagic)
    throw DataFileError(fmt::format("{}: bad magic {} (an llm.c token shard starts with {})", path,
                                    header[0], kTokenShardMagic));
  if (header[1] != kTokenShardVersion)
    throw DataFileError(fmt::format("{}: unsupported token shard version {} (supported: {})", path,
                                    header[1], kTokenShardVersion));
  const int64_t declared = header[2];
  if (declared <= 0)
    throw DataFileError(fmt::format("{}: header declares {} tokens; a shard must hold at least one",
                                    path, declared));
  const uint64_t payload = file_bytes - kTokenShardHeaderBytes;
  const uint64_t expected = uint64_t(declared) * sizeof(uint16_t);
  if (payload < expected)
    throw DataFileError(fmt::format(
        "{}: truncated: the header declares {} tokens ({} bytes) but only {} bytes follow it", path,
        declared, expected, payload));
  if (payload > expected)
    throw DataFileError(fmt::format(
        "{}: size mismatch: the header declares {} tokens ({} bytes) but {} bytes follow it", path,
        declared, expected, payload));
  map_bytes_ = size_t(file_bytes);
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw DataFileError(fmt::format("{}: cannot map the shard: {}", path, std::strerror(errno)));
  }
  tokens_ =
      reinterpret_cast<const uint16_t*>(static_cast<const char*>(map_) + kTokenShardHeaderBytes);
  count_ = declared;
}

MappedTokenShard::~MappedTokenShard() {
  if (map_) ::munmap(map_, map_bytes_);
}

void MappedTokenShard::check_vocab(int vocab_size) const {
  if (vocab_size <= 0) return;
  // A branch-free max vectorises; the slow search runs only when something is wrong.
  uint16_t max_token = 0;
  for (int64_t i = 0; i < count_; ++i) max_token = tokens_[i] > max_token ? tokens_[i] : max_token;
  if (max_token < vocab_size) return;
  for (int64_t i = 0; i < count_; ++i) {
    if (tokens_[i] >= vocab_size)
      throw DataFileError(fmt::format("{}: token {} at index {} is out of range for vocab_size {}",
                                      path_, tokens_[i], i, vocab_size));
  }
}

std::vector<uint16_t> read_token_shard(const std::string& path) {
  MappedTokenShard shard(path);
  return std::vector<uint16_t>(shard.tokens(), shard.tokens() + shard.size());
}

}  // namespace hybrid::engine
