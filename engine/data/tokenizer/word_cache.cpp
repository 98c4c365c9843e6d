#include "engine/data/tokenizer/word_cache.h"

#include <mutex>

namespace hybrid::engine {

bool WordCache::find(std::string_view word, std::vector<int32_t>& out) const {
  const size_t hash = Hash{}(word);
  Shard& shard = shard_of(hash);
  std::shared_lock lock(shard.mutex);
  const auto it = shard.words.find(word);
  if (it == shard.words.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::insert(std::string_view word, const int32_t* tokens, size_t count) {
  if (word.size() > kMaxWordBytes) return;
  Shard& shard = shard_of(Hash{}(word));
  std::unique_lock lock(shard.mutex);
  if (shard.words.size() >= per_shard_) return;
  shard.words.try_emplace(std::string(word), tokens, tokens + count);
}

}  // namespace hybrid::engine
