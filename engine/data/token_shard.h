// llm.c token shards: a header of 256 int32 — [0] magic 20240520, [1] version 1,
// [2] number of tokens — then that many uint16 tokens (GPT-2 vocabulary).
// Little-endian, as llm.c writes them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hybrid::engine {

inline constexpr int32_t kTokenShardMagic = 20240520;
inline constexpr int32_t kTokenShardVersion = 1;
inline constexpr size_t kTokenShardHeaderInts = 256;
inline constexpr size_t kTokenShardHeaderBytes = kTokenShardHeaderInts * sizeof(int32_t);

// Writes a shard atomically (temporary file, fsync, rename). Throws
// DataFileError naming the path; tokens must not be empty.
void write_token_shard(const std::string& path, std::span<const uint16_t> tokens);

// A validated, read-only memory map of one shard. The constructor checks the
// magic, the version, that the header declares at least one token and that the
// file holds exactly that many; each failure is a DataFileError naming the file.
class MappedTokenShard {
 public:
  explicit MappedTokenShard(const std::string& path);
  ~MappedTokenShard();
  MappedTokenShard(const MappedTokenShard&) = delete;
  MappedTokenShard& operator=(const MappedTokenShard&) = delete;

  const uint16_t* tokens() const { return tokens_; }
  int64_t size() const { return count_; }
  const std::string& path() const { return path_; }

  // Throws DataFileError naming the file, the index and the token when a token
  // is >= vocab_size.
  void check_vocab(int vocab_size) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint16_t* tokens_ = nullptr;
  int64_t count_ = 0;
};

// Reads a whole shard into memory (validated as above).
std::vector<uint16_t> read_token_shard(const std::string& path);

}  // namespace hybrid::engine
