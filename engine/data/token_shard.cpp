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

namespace {

template <typename Token>
void write_shard(const std::string& path, std::span<const Token> tokens, int32_t version) {
  if (tokens.empty())
    throw DataFileError(fmt::format("{}: refusing to write an empty token shard", path));
  if (tokens.size() > size_t(INT32_MAX))
    throw DataFileError(fmt::format(
        "{}: {} tokens do not fit one shard (the header's count is int32)", path, tokens.size()));
  std::array<int32_t, kTokenShardHeaderInts> header{};
  header[0] = kTokenShardMagic;
  header[1] = version;
  header[2] = int32_t(tokens.size());
  base::AtomicFileWriter out(path);
  out.write(header.data(), sizeof(header));
  out.write(tokens.data(), tokens.size_bytes());
  out.commit();
}

}  // namespace

void write_token_shard(const std::string& path, std::span<const uint16_t> tokens) {
  write_shard(path, tokens, kTokenShardVersion16);
}

void write_token_shard(const std::string& path, std::span<const uint32_t> tokens) {
  write_shard(path, tokens, kTokenShardVersion32);
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
  if (header[1] != kTokenShardVersion16 && header[1] != kTokenShardVersion32)
    throw DataFileError(fmt::format(
        "{}: unsupported token shard version {} (supported: {} for uint16 tokens, {} for uint32)",
        path, header[1], kTokenShardVersion16, kTokenShardVersion32));
  token_bytes_ = header[1] == kTokenShardVersion16 ? 2 : 4;
  const int64_t declared = header[2];
  if (declared <= 0)
    throw DataFileError(fmt::format("{}: header declares {} tokens; a shard must hold at least one",
                                    path, declared));
  const uint64_t payload = file_bytes - kTokenShardHeaderBytes;
  const uint64_t expected = uint64_t(declared) * uint64_t(token_bytes_);
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
  tokens_ = static_cast<const char*>(map_) + kTokenShardHeaderBytes;
  count_ = declared;
}

MappedTokenShard::~MappedTokenShard() {
  if (map_) ::munmap(map_, map_bytes_);
}

namespace {

template <typename Token>
void check_tokens(const std::string& path, const Token* tokens, int64_t count, int vocab_size) {
  // A branch-free max vectorises; the slow search runs only when something is wrong.
  Token max_token = 0;
  for (int64_t i = 0; i < count; ++i) max_token = tokens[i] > max_token ? tokens[i] : max_token;
  if (int64_t(max_token) < vocab_size) return;
  for (int64_t i = 0; i < count; ++i) {
    if (int64_t(tokens[i]) >= vocab_size)
      throw DataFileError(fmt::format("{}: token {} at index {} is out of range for vocab_size {}",
                                      path, tokens[i], i, vocab_size));
  }
}

}  // namespace

void MappedTokenShard::check_vocab(int vocab_size) const {
  if (vocab_size <= 0) return;
  if (token_bytes_ == 2)
    check_tokens(path_, static_cast<const uint16_t*>(tokens_), count_, vocab_size);
  else
    check_tokens(path_, static_cast<const uint32_t*>(tokens_), count_, vocab_size);
}

std::vector<uint32_t> read_token_shard(const std::string& path) {
  MappedTokenShard shard(path);
  std::vector<uint32_t> tokens(size_t(shard.size()));
  for (int64_t i = 0; i < shard.size(); ++i) tokens[size_t(i)] = shard.at(i);
  return tokens;
}

}  // namespace hybrid::engine
