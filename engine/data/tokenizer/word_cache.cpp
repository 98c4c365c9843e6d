#include "engine/data/tokenizer/word_cache.h"

#include <cstring>
#include <functional>
#include <mutex>

namespace hybrid::engine {
namespace {

uint64_t hash_of(std::string_view word) { return std::hash<std::string_view>{}(word); }
uint32_t tag_of(uint64_t hash) { return uint32_t(hash >> 32) | 1u; }  // never 0
size_t padded(size_t n) { return (n + 3) & ~size_t(3); }

}  // namespace

WordCache::WordCache() {
  for (Shard& s : shards_) s.slots.assign(kSlotsPerShard, 0);
}

const uint64_t* WordCache::probe(const Shard& shard, uint64_t hash, std::string_view word) {
  const uint32_t tag = tag_of(hash);
  size_t i = size_t(hash >> 6) & (kSlotsPerShard - 1);  // the low 6 bits chose the shard
  for (size_t n = 0; n < kSlotsPerShard; ++n, i = (i + 1) & (kSlotsPerShard - 1)) {
    const uint64_t slot = shard.slots[i];
    if (slot == 0) return &shard.slots[i];
    if (uint32_t(slot >> 32) != tag) continue;
    const unsigned char* entry = shard.arena.data() + uint32_t(slot);
    if (entry[0] == word.size() && std::memcmp(entry + 2, word.data(), word.size()) == 0)
      return &shard.slots[i];
  }
  return nullptr;
}

bool WordCache::find(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  const uint64_t hash = hash_of(word);
  const Shard& shard = shards_[hash % kShards];
  std::shared_lock lock(shard.mutex);
  const uint64_t* slot = probe(shard, hash, word);
  if (slot == nullptr || *slot == 0) return false;
  const unsigned char* entry = shard.arena.data() + uint32_t(*slot);
  const size_t count = entry[1];
  const size_t at = out.size();
  out.resize(at + count);
  std::memcpy(out.data() + at, entry + padded(2 + word.size()), count * sizeof(int32_t));
  return true;
}

void WordCache::insert(std::string_view word, const int32_t* tokens, size_t count) {
  if (word.size() > kMaxWordBytes || count > 255) return;
  const uint64_t hash = hash_of(word);
  Shard& shard = shards_[hash % kShards];
  std::unique_lock lock(shard.mutex);
  if (2 * shard.words >= kSlotsPerShard) return;
  auto* slot = const_cast<uint64_t*>(probe(shard, hash, word));
  if (slot == nullptr || *slot != 0) return;  // another thread kept it first
  const size_t offset = shard.arena.size();
  const size_t ids_at = padded(2 + word.size());
  shard.arena.resize(offset + ids_at + count * sizeof(int32_t));
  unsigned char* entry = shard.arena.data() + offset;
  entry[0] = static_cast<unsigned char>(word.size());
  entry[1] = static_cast<unsigned char>(count);
  std::memcpy(entry + 2, word.data(), word.size());
  std::memcpy(entry + ids_at, tokens, count * sizeof(int32_t));
  *slot = (uint64_t(tag_of(hash)) << 32) | uint32_t(offset);
  ++shard.words;
}

}  // namespace hybrid::engine
