// A read-only token stream: the concatenation of llm.c shards matched by a glob
// (sorted by name, memory-mapped; 16- and 32-bit shards may mix), or tokens held in memory
// (synthetic data). Copies share the underlying maps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hybrid::engine {

class MappedTokenShard;

class TokenDataset {
 public:
  TokenDataset() = default;

  // Opens every file matching `pattern` in name order and validates each (see
  // MappedTokenShard); vocab_size > 0 also checks every token is below it.
  // Throws DataFileError naming the glob when nothing matches, or the bad file.
  static TokenDataset open(const std::string& pattern, int vocab_size = 0);
  // Wraps tokens held in memory; `name` appears in messages.
  static TokenDataset from_tokens(std::vector<uint16_t> tokens, std::string name = "<memory>");

  int64_t size() const { return total_; }
  bool empty() const { return total_ == 0; }
  const std::string& name() const { return name_; }
  std::vector<std::string> files() const;  // empty for in-memory data

  uint32_t at(int64_t i) const;  // 0 <= i < size()
  // Writes tokens [start, start + count) to out, wrapping past the end of the
  // stream back to its start; start may be any non-negative position.
  void copy_wrapped(int64_t start, int64_t count, int32_t* out) const;

 private:
  struct Segment {
    const void* data;  // uint16 or uint32 tokens
    int token_bytes;
    int64_t size;
    uint32_t at(int64_t i) const {
      return token_bytes == 2 ? static_cast<const uint16_t*>(data)[i]
                              : static_cast<const uint32_t*>(data)[i];
    }
  };
  size_t segment_of(int64_t i) const;

  std::string name_;
  std::vector<Segment> segments_;
  std::vector<int64_t> starts_;  // starts_[k]: stream offset of segments_[k]
  int64_t total_ = 0;
  std::vector<std::shared_ptr<const MappedTokenShard>> shards_;
  std::shared_ptr<const std::vector<uint16_t>> memory_;
};

}  // namespace hybrid::engine
