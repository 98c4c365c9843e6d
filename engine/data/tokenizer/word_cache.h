// The tokens of words already encoded, shared by every thread that encodes with
// one tokenizer: most words of a text repeat, and a lookup is cheaper than BPE
// merging. Sharded by hash, each shard behind its own reader-writer lock, so
// that threads rarely wait on each other. Bounded: once full, new words are
// encoded but no longer kept (Hugging Face's cache does the same).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hybrid::engine {

class WordCache {
 public:
  explicit WordCache(size_t capacity = 1 << 16) : per_shard_(capacity / kShards + 1) {}

  // Appends the word's cached tokens to `out` and returns true, or returns false.
  bool find(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, const int32_t* tokens, size_t count);

  // Words longer than this are not kept: they are rare, and the merging of a
  // long word is what their lookups would save anyway.
  static constexpr size_t kMaxWordBytes = 64;

 private:
  static constexpr size_t kShards = 64;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    mutable std::shared_mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> words;
  };
  Shard& shard_of(size_t hash) const { return shards_[(hash >> 7) % kShards]; }

  size_t per_shard_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace hybrid::engine
