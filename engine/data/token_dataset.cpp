#include "engine/data/token_dataset.h"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <stdexcept>

#include "engine/data/data_file_error.h"
#include "engine/data/token_shard.h"

namespace hybrid::engine {

namespace {

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && files.empty()))
    throw DataFileError(fmt::format("{}: no token shards match this glob", pattern));
  if (rc != 0)
    throw DataFileError(fmt::format("{}: cannot expand this glob (glob error {})", pattern, rc));
  std::sort(files.begin(), files.end());  // byte order, whatever the locale
  return files;
}

}  // namespace

TokenDataset TokenDataset::open(const std::string& pattern, int vocab_size) {
  TokenDataset d;
  d.name_ = pattern;
  for (const auto& file : glob_files(pattern)) {
    auto shard = std::make_shared<const MappedTokenShard>(file);
    shard->check_vocab(vocab_size);
    d.segments_.push_back({shard->data(), shard->token_bytes(), shard->size()});
    d.starts_.push_back(d.total_);
    d.total_ += shard->size();
    d.shards_.push_back(std::move(shard));
  }
  return d;
}

TokenDataset TokenDataset::from_tokens(std::vector<uint16_t> tokens, std::string name) {
  TokenDataset d;
  d.name_ = std::move(name);
  auto mem = std::make_shared<const std::vector<uint16_t>>(std::move(tokens));
  if (!mem->empty()) {
    d.segments_.push_back({mem->data(), 2, int64_t(mem->size())});
    d.starts_.push_back(0);
    d.total_ = int64_t(mem->size());
  }
  d.memory_ = std::move(mem);
  return d;
}

std::vector<std::string> TokenDataset::files() const {
  std::vector<std::string> out;
  for (const auto& s : shards_) out.push_back(s->path());
  return out;
}

size_t TokenDataset::segment_of(int64_t i) const {
  // Last segment starting at or before i.
  return size_t(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin()) - 1;
}

uint32_t TokenDataset::at(int64_t i) const {
  if (i < 0 || i >= total_)
    throw std::out_of_range(fmt::format("{}: token index {} outside 0..{}", name_, i, total_ - 1));
  const size_t k = segment_of(i);
  return segments_[k].at(i - starts_[k]);
}

void TokenDataset::copy_wrapped(int64_t start, int64_t count, int32_t* out) const {
  if (count <= 0) return;
  if (total_ == 0)
    throw std::logic_error(fmt::format("{}: reading from an empty token stream", name_));
  if (start < 0)
    throw std::out_of_range(fmt::format("{}: negative token position {}", name_, start));
  int64_t pos = start % total_;
  size_t k = segment_of(pos);
  while (count > 0) {
    const Segment& seg = segments_[k];
    const int64_t offset = pos - starts_[k];
    const int64_t n = std::min(count, seg.size - offset);
    if (seg.token_bytes == 2)
      std::copy_n(static_cast<const uint16_t*>(seg.data) + offset, n, out);
    else
      std::copy_n(static_cast<const uint32_t*>(seg.data) + offset, n, out);
    out += n;
    count -= n;
    pos += n;
    if (++k == segments_.size()) {  // wrap to the start of the stream
      k = 0;
      pos = 0;
    }
  }
}

}  // namespace hybrid::engine
