// llm.c token shards: a header of 256 int32 — [0] magic 20240520, [1] version,
// [2] number of tokens — then that many tokens: uint16 in version 1 (GPT-2's
// vocabulary), uint32 in version 2 (llm.c's Llama 3 shards, any vocabulary).
// Little-endian, as llm.c writes them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hybrid::engine {

inline constexpr int32_t kTokenShardMagic = 20240520;
inline constexpr int32_t kTokenShardVersion16 = 1;  // uint16 tokens
inline constexpr int32_t kTokenShardVersion32 = 2;  // uint32 tokens
inline constexpr size_t kTokenShardHeaderInts = 256;
inline constexpr size_t kTokenShardHeaderBytes = kTokenShardHeaderInts * sizeof(int32_t);

// The bytes per token a vocabulary needs: 2 while every id fits 16 bits.
inline int token_bytes_for_vocab(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

// Writes a shard atomically (temporary file, fsync, rename): version 1 from
// uint16 tokens, version 2 from uint32 ones. Throws DataFileError naming the
// path; tokens must not be empty.
void write_token_shard(const std::string& path, std::span<const uint16_t> tokens);
void write_token_shard(const std::string& path, std::span<const uint32_t> tokens);

// A validated, read-only memory map of one shard. The constructor checks the
// magic, the version, that the header declares at least one token and that the
// file holds exactly that many; each failure is a DataFileError naming the file.
class MappedTokenShard {
 public:
  explicit MappedTokenShard(const std::string& path);
  ~MappedTokenShard();
  MappedTokenShard(const MappedTokenShard&) = delete;
  MappedTokenShard& operator=(const MappedTokenShard&) = delete;

  // The token payload: uint16 (token_bytes() == 2) or uint32 (4) values.
  const void* data() const { return tokens_; }
  int token_bytes() const { return token_bytes_; }
  uint32_t at(int64_t i) const {
    return token_bytes_ == 2 ? static_cast<const uint16_t*>(tokens_)[i]
                             : static_cast<const uint32_t*>(tokens_)[i];
  }
  int64_t size() const { return count_; }
  const std::string& path() const { return path_; }

  // Throws DataFileError naming the file, the index and the token when a token
  // is >= vocab_size.
  void check_vocab(int vocab_size) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const void* tokens_ = nullptr;
  int token_bytes_ = 2;
  int64_t count_ = 0;
};

// Reads a whole shard of either version into memory (validated as above).
std::vector<uint32_t> read_token_shard(const std::string& path);

}  // namespace hybrid::engine
