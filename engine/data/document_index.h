// The documents of a token stream. llm.c's shards (and hybrid-data tokenize's)
// put the end-of-text token before every document, so a document starts at each
// separator token and runs to the next one (its separator included); tokens
// before the first separator, if any, form document 0. Only the starts are kept
// (8 bytes a document), found in one pass over the stream.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/data/token_dataset.h"

namespace hybrid::engine {

// The separator (end-of-text) id: `explicit_id` when given, else the stream's
// first token (llm.c's shards and ours begin with it; a stream that does not
// needs the explicit id). Throws DataFileError naming the stream when it is empty.
uint32_t choose_separator(const TokenDataset& data,
                          std::optional<uint32_t> explicit_id = std::nullopt);

class DocumentIndex {
 public:
  DocumentIndex() = default;
  // Scans the stream once (copied out in chunks of 64 Ki tokens: TokenDataset::at
  // per token searches the segments each time). Throws DataFileError naming the
  // stream when it is empty.
  DocumentIndex(const TokenDataset& data, uint32_t separator);

  int64_t count() const { return int64_t(starts_.size()); }
  // Document d (0 <= d < count()) holds stream tokens [start(d), end(d)).
  int64_t start(int64_t d) const { return starts_[size_t(d)]; }
  int64_t end(int64_t d) const {
    return size_t(d) + 1 < starts_.size() ? starts_[size_t(d) + 1] : stream_size_;
  }
  int64_t length(int64_t d) const { return end(d) - start(d); }

  const std::vector<int64_t>& starts() const { return starts_; }
  uint32_t separator() const { return separator_; }
  int64_t stream_size() const { return stream_size_; }

 private:
  std::vector<int64_t> starts_;  // ascending; starts_[0] == 0
  int64_t stream_size_ = 0;
  uint32_t separator_ = 0;
};

}  // namespace hybrid::engine
