#include "engine/data/tokenizer/bpe_merges.h"

#include <algorithm>

namespace hybrid::engine {
namespace {

struct Symbol {
  int32_t id;
  int32_t prev, next;  // positions in the word; -1 at either end
  bool alive;
};

struct Candidate {
  int32_t rank, pos, merged;
  // std::push_heap keeps the largest on top: the lowest rank, then the leftmost.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

// Per-thread scratch, so that a word costs no allocation once warm.
struct Scratch {
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

}  // namespace

BpeMerges::BpeMerges(const std::array<int32_t, 256>& byte_ids, std::optional<int32_t> unk,
                     bool fuse_unk)
    : byte_ids_(byte_ids), unk_(unk), fuse_unk_(fuse_unk) {
  slots_.assign(16, Slot{kEmpty, {}});
  shift_ = 64 - 4;
}

size_t BpeMerges::slot_of(uint64_t key) const {
  // Fibonacci hashing; the table's size is a power of two.
  size_t i = size_t((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & (slots_.size() - 1);
  return i;
}

void BpeMerges::grow() {
  std::vector<Slot> old(slots_.size() * 2, Slot{kEmpty, {}});
  old.swap(slots_);
  --shift_;
  for (const Slot& s : old)
    if (s.key != kEmpty) slots_[slot_of(s.key)] = s;
}

void BpeMerges::add(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  if (2 * (count_ + 1) > slots_.size()) grow();
  const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  Slot& slot = slots_[slot_of(key)];
  if (slot.key == kEmpty) ++count_;
  slot = Slot{key, Merge{rank, merged}};
}

const BpeMerges::Merge* BpeMerges::find(int32_t left, int32_t right) const {
  const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  const Slot& slot = slots_[slot_of(key)];
  return slot.key == kEmpty ? nullptr : &slot.merge;
}

void BpeMerges::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  thread_local Scratch scratch;
  std::vector<Symbol>& sym = scratch.symbols;
  std::vector<Candidate>& heap = scratch.heap;
  sym.clear();
  heap.clear();
  for (const char c : word) {
    int32_t id = byte_ids_[static_cast<unsigned char>(c)];
    if (id < 0) {
      if (!unk_) continue;
      id = *unk_;
      if (fuse_unk_ && !sym.empty() && sym.back().id == id) continue;
    }
    const auto n = int32_t(sym.size());
    sym.push_back(Symbol{id, n - 1, n + 1, true});
  }
  if (sym.empty()) return;
  sym.back().next = -1;
  for (int32_t i = 0; i + 1 < int32_t(sym.size()); ++i)
    if (const Merge* m = find(sym[size_t(i)].id, sym[size_t(i) + 1].id))
      heap.push_back(Candidate{m->rank, i, m->merged});
  std::make_heap(heap.begin(), heap.end());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = sym[size_t(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[size_t(left.next)];
    // A stale candidate: one of its symbols has merged since it was queued.
    const Merge* now = find(left.id, right.id);
    if (now == nullptr || now->merged != top.merged) continue;
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[size_t(left.next)].prev = top.pos;
    if (left.prev >= 0)
      if (const Merge* m = find(sym[size_t(left.prev)].id, left.id)) {
        heap.push_back(Candidate{m->rank, left.prev, m->merged});
        std::push_heap(heap.begin(), heap.end());
      }
    if (left.next >= 0)
      if (const Merge* m = find(left.id, sym[size_t(left.next)].id)) {
        heap.push_back(Candidate{m->rank, top.pos, m->merged});
        std::push_heap(heap.begin(), heap.end());
      }
  }
  for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) out.push_back(sym[size_t(i)].id);
}

}  // namespace hybrid::engine
