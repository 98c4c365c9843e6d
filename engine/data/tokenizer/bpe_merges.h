// The BPE model of a byte-level tokenizer: the merge table (a pair of token ids
// → its rank and the merged token) and the merging of one word, exactly as
// Hugging Face's BPE merges (no dropout): the pending merge of lowest rank,
// leftmost among equal ranks, from a priority queue of candidate pairs that
// are checked when popped.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace hybrid::engine {

class BpeMerges {
 public:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  // byte_ids[b]: the token of byte b alone, or -1 when the vocabulary lacks it
  // (then the byte becomes `unk` when there is one, fused with the unknown
  // byte before it when fuse_unk, and is dropped when there is none, as
  // Hugging Face does).
  BpeMerges(const std::array<int32_t, 256>& byte_ids, std::optional<int32_t> unk, bool fuse_unk);

  // Adds the merge of rank `rank` (ranks count up from 0 in file order). A pair
  // given twice keeps the later entry, as Hugging Face's map does.
  void add(int32_t left, int32_t right, int32_t rank, int32_t merged);
  const Merge* find(int32_t left, int32_t right) const;
  size_t size() const { return count_; }

  // Appends the tokens of one word (its bytes) to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  struct Slot {
    uint64_t key;  // left << 32 | right; kEmpty when unused
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  size_t slot_of(uint64_t key) const;
  void grow();

  std::array<int32_t, 256> byte_ids_;
  std::optional<int32_t> unk_;
  bool fuse_unk_;
  // Open addressing with linear probing, at most half full.
  std::vector<Slot> slots_;
  size_t count_ = 0;
  int shift_ = 0;
};

}  // namespace hybrid::engine
