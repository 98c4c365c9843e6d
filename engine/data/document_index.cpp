#include "engine/data/document_index.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/data/data_file_error.h"

namespace hybrid::engine {

namespace {

void require_tokens(const TokenDataset& data) {
  if (data.empty())
    throw DataFileError(fmt::format("{}: an empty token stream holds no documents", data.name()));
}

}  // namespace

uint32_t choose_separator(const TokenDataset& data, std::optional<uint32_t> explicit_id) {
  if (explicit_id) return *explicit_id;
  require_tokens(data);
  return data.at(0);
}

DocumentIndex::DocumentIndex(const TokenDataset& data, uint32_t separator)
    : stream_size_(data.size()), separator_(separator) {
  require_tokens(data);
  constexpr int64_t kChunk = int64_t(1) << 16;  // 256 KiB of int32: stays in L2
  std::vector<int32_t> chunk(size_t(std::min(kChunk, stream_size_)));
  const int32_t sep = int32_t(separator);  // copy_wrapped writes ids as int32 bits
  starts_.push_back(0);                    // document 0, with or without a separator
  for (int64_t base = 0; base < stream_size_; base += kChunk) {
    const int64_t n = std::min(kChunk, stream_size_ - base);
    data.copy_wrapped(base, n, chunk.data());
    const int32_t* p = chunk.data();
    for (int64_t i = base == 0 ? 1 : 0; i < n; ++i)  // a separator at 0 starts document 0
      if (p[i] == sep) starts_.push_back(base + i);
  }
}

}  // namespace hybrid::engine
