// The tokens of words already encoded, shared by every thread that encodes with
// one tokenizer: most words of a text repeat, and a lookup is cheaper than BPE
// merging. Sharded by hash, each shard behind its own reader-writer lock, so
// that threads rarely wait on each other. A shard is one open-addressing table
// of 8-byte slots (a tag of the hash and an offset) over one arena holding each
// word's bytes and tokens side by side: a lookup touches two cache lines, where
// std::unordered_map took four and a division. Bounded: once a shard is half
// full, new words are encoded but no longer kept (Hugging Face's cache stops
// growing likewise).
#pragma once

#include <array>
#include <cstdint>
#include <shared_mutex>
#include <string_view>
#include <vector>

namespace hybrid::engine {

class WordCache {
 public:
  // Room for about 64 × 2048 = 131,072 words.
  WordCache();

  // Appends the word's cached tokens to `out` and returns true, or returns false.
  bool find(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, const int32_t* tokens, size_t count);

  // Words longer than this are not kept: they are rare, and the merging of a
  // long word is what their lookups would save anyway.
  static constexpr size_t kMaxWordBytes = 64;

 private:
  static constexpr size_t kShards = 64;
  static constexpr size_t kSlotsPerShard = 4096;  // at most half of them used
  struct Shard {
    mutable std::shared_mutex mutex;
    // tag (upper 32 bits of the hash, never 0) << 32 | offset into the arena; 0: empty.
    std::vector<uint64_t> slots;
    // Per word: its length, its token count, its bytes, padding to 4, its tokens.
    std::vector<unsigned char> arena;
    size_t words = 0;
  };
  // The slot holding `word` or the empty one where it would go, or nullptr when full.
  static const uint64_t* probe(const Shard& shard, uint64_t hash, std::string_view word);

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace hybrid::engine
