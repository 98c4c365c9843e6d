#include "engine/data/packing.h"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <vector>

namespace hybrid::engine {

namespace {

struct Slot {
  int row = 0;
  int column = 0;
};

// The greedy placement: the current row if the unit fits the rest of it, else
// the next row; nothing once the rows are used up.
class RowCursor {
 public:
  RowCursor(int rows, int seq_len) : rows_(rows), seq_len_(seq_len) {}

  std::optional<Slot> place(int length) {
    if (used_ + length > seq_len_) {
      ++row_;
      used_ = 0;
    }
    if (row_ >= rows_) return std::nullopt;
    const Slot slot{row_, used_};
    used_ += length;
    return slot;
  }

 private:
  int rows_, seq_len_;
  int row_ = 0, used_ = 0;
};

void check_unit(const DocumentUnit& u, int seq_len) {
  if (u.length <= 0 || u.length > seq_len)
    throw std::invalid_argument(
        fmt::format("packing: a unit of {} tokens at stream position {} (document {}) is outside "
                    "1..seq_len = {}",
                    u.length, u.start, u.document, seq_len));
}

void pad_row_tail(const MicroBatchArrays& out, int64_t row_begin, int used, int seq_len,
                  uint32_t separator) {
  for (int c = used; c < seq_len; ++c) {
    out.inputs[row_begin + c] = int32_t(separator);
    out.targets[row_begin + c] = -1;
    out.positions[row_begin + c] = c - used;
  }
}

}  // namespace

size_t units_in_micro_batch(std::span<const DocumentUnit> units, const PackingLimits& limits) {
  RowCursor cursor(limits.rows, limits.seq_len);
  int64_t tokens = 0;
  size_t n = 0;
  for (const DocumentUnit& u : units) {
    check_unit(u, limits.seq_len);
    if (limits.max_units > 0 && int64_t(n) + 1 > limits.max_units) break;
    if (limits.max_tokens > 0 && tokens + u.length > limits.max_tokens) break;
    if (!cursor.place(u.length)) break;
    tokens += u.length;
    ++n;
  }
  return n;
}

BatchCounts pack_micro_batch(const TokenDataset& data, std::span<const DocumentUnit> units,
                             const PackingLimits& limits, uint32_t separator,
                             const MicroBatchArrays& out) {
  const int T = limits.seq_len;
  RowCursor cursor(limits.rows, T);
  std::vector<int> used(size_t(limits.rows), 0);
  BatchCounts counts;
  for (const DocumentUnit& u : units) {
    check_unit(u, T);
    const std::optional<Slot> slot = cursor.place(u.length);
    if (!slot)
      throw std::logic_error(fmt::format("packing: {} units do not fit {} rows of {} tokens",
                                         units.size(), limits.rows, T));
    const int64_t at = int64_t(slot->row) * T + slot->column;
    copy_unit(data, u, out.inputs + at, out.targets + at);
    for (int i = 0; i < u.length; ++i) out.positions[at + i] = i;
    used[size_t(slot->row)] = slot->column + u.length;
    counts.sequences += 1;
    counts.real_tokens += u.length;
  }
  if ((limits.max_tokens > 0 && counts.real_tokens > limits.max_tokens) ||
      (limits.max_units > 0 && counts.sequences > limits.max_units))
    throw std::logic_error(
        fmt::format("packing: {} units of {} tokens pass the limits ({} units, {} tokens)",
                    counts.sequences, counts.real_tokens, limits.max_units, limits.max_tokens));
  for (int r = 0; r < limits.rows; ++r)
    pad_row_tail(out, int64_t(r) * T, used[size_t(r)], T, separator);
  counts.padded_tokens = int64_t(limits.rows) * T - counts.real_tokens;
  return counts;
}

}  // namespace hybrid::engine
