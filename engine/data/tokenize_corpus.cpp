#include "engine/data/tokenize_corpus.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <stdexcept>

#include "engine/data/data_file_error.h"
#include "engine/data/text_documents.h"
#include "engine/data/token_shard.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

bool is_validation_document(int64_t index, double val_fraction) {
  return std::floor(double(index + 1) * val_fraction) > std::floor(double(index) * val_fraction);
}

namespace {

// One split's stream of tokens, cut into shards of shard_tokens as it grows.
class ShardSplit {
 public:
  ShardSplit(std::string folder, std::string split, int64_t shard_tokens, int token_bytes)
      : folder_(std::move(folder)),
        split_(std::move(split)),
        shard_tokens_(shard_tokens),
        token_bytes_(token_bytes) {}

  void append(uint32_t eot, const std::vector<int>& ids, std::vector<std::string>& files) {
    ++documents;
    push(eot, files);
    for (int id : ids) push(uint32_t(id), files);
  }
  void finish(std::vector<std::string>& files) {
    if (!buf_.empty()) flush(files);
  }

  int64_t documents = 0, tokens = 0;

 private:
  void push(uint32_t id, std::vector<std::string>& files) {
    buf_.push_back(id);
    ++tokens;
    if (int64_t(buf_.size()) == shard_tokens_) flush(files);
  }
  void flush(std::vector<std::string>& files) {
    const std::string name = fmt::format("{}_{:06d}.bin", split_, index_++);
    const std::string path = folder_ + "/" + name;
    if (token_bytes_ == 4) {
      write_token_shard(path, std::span<const uint32_t>(buf_));
    } else {
      narrow_.assign(buf_.begin(), buf_.end());
      write_token_shard(path, std::span<const uint16_t>(narrow_));
    }
    files.push_back(name);
    buf_.clear();
  }

  std::string folder_, split_;
  int64_t shard_tokens_;
  int token_bytes_;
  int index_ = 0;
  std::vector<uint32_t> buf_;
  std::vector<uint16_t> narrow_;
};

// The hidden folder beside out_dir that the shards are written into; renamed to
// out_dir by commit(), removed with what it holds otherwise.
class StagingFolder {
 public:
  explicit StagingFolder(const std::string& out_dir) : out_(out_dir) {
    std::error_code ec;
    if (fs::exists(out_, ec) && (!fs::is_directory(out_, ec) || !fs::is_empty(out_, ec)))
      throw DataFileError(fmt::format(
          "{}: the output folder already exists and is not empty (nothing is overwritten: "
          "choose a new folder)",
          out_dir));
    const fs::path abs = fs::absolute(out_).lexically_normal();
    const fs::path parent = (abs.has_filename() ? abs : abs.parent_path()).parent_path();
    const std::string name = (abs.has_filename() ? abs : abs.parent_path()).filename().string();
    path_ = parent / fmt::format(".{}.partial-{}", name, ::getpid());
    fs::remove_all(path_, ec);
    if (!fs::create_directories(path_, ec) || ec)
      throw DataFileError(
          fmt::format("{}: cannot create the output folder: {}", out_dir, ec.message()));
  }
  ~StagingFolder() {
    std::error_code ec;
    if (!committed_) fs::remove_all(path_, ec);
  }
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;

  std::string path() const { return path_.string(); }
  void commit() {
    std::error_code ec;
    if (fs::exists(out_, ec)) fs::remove(out_, ec);  // checked empty above
    fs::rename(path_, out_, ec);
    if (ec)
      throw DataFileError(
          fmt::format("{}: cannot move the shards into place: {}", out_.string(), ec.message()));
    committed_ = true;
  }

 private:
  fs::path out_, path_;
  bool committed_ = false;
};

// Encodes `docs` on `threads` threads; the ids keep the documents' order.
std::vector<std::vector<int>> encode_all(const Tokenizer& tokenizer,
                                         const std::vector<std::string>& docs, int threads) {
  std::vector<std::vector<int>> ids(docs.size());
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (size_t i = 0; i < docs.size(); ++i) {
    try {
      ids[i] = tokenizer.encode(docs[i]);
    } catch (...) {
#pragma omp critical(hybrid_tokenize_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return ids;
}

int checked_token_bytes(const Tokenizer& tokenizer, const TokenizeOptions& o) {
  const int vocab = tokenizer.vocab_size();
  const int bytes = o.token_bytes == 0 ? token_bytes_for_vocab(vocab) : o.token_bytes;
  if (bytes != 2 && bytes != 4)
    throw std::invalid_argument(fmt::format("token bytes must be 2 or 4, got {}", o.token_bytes));
  if (bytes == 2 && vocab > 65536)
    throw std::invalid_argument(fmt::format(
        "the tokenizer's vocabulary ({} tokens) does not fit 16-bit shard tokens: ids reach {} "
        "(use 4-byte tokens, or leave the width to the vocabulary)",
        vocab, vocab - 1));
  return bytes;
}

}  // namespace

TokenizeSummary tokenize_corpus(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                                const TokenizeOptions& o,
                                const std::function<void(const TokenizeProgress&)>& progress) {
  if (!(o.val_fraction >= 0 && o.val_fraction < 1))
    throw std::invalid_argument(
        fmt::format("the validation fraction must be in [0, 1), got {}", o.val_fraction));
  if (o.shard_tokens < 1 || o.shard_tokens > INT32_MAX)
    throw std::invalid_argument(
        fmt::format("shard tokens must be in 1..{}, got {}", INT32_MAX, o.shard_tokens));
  const auto eot = tokenizer.eos_id();
  if (!eot)
    throw std::invalid_argument(fmt::format(
        "the tokenizer ({}) has no end-of-text token to separate documents", tokenizer.describe()));
  TokenizeSummary s;
  s.token_bytes = checked_token_bytes(tokenizer, o);
  TextDocuments corpus(inputs);
  StagingFolder staging(o.out_dir);
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  ShardSplit train(staging.path(), "train", o.shard_tokens, s.token_bytes);
  ShardSplit val(staging.path(), "val", o.shard_tokens, s.token_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> docs;
  while (corpus.next_batch(docs, o.batch_bytes)) {
    const auto ids = encode_all(tokenizer, docs, threads);
    for (size_t i = 0; i < docs.size(); ++i) {
      s.text_bytes += docs[i].size();
      if (docs[i].empty()) {
        ++s.empty_documents;
        continue;
      }
      ShardSplit& split = is_validation_document(s.documents++, o.val_fraction) ? val : train;
      split.append(uint32_t(*eot), ids[i], s.files);
    }
    docs.clear();
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress)
      progress({corpus.bytes_read(), corpus.total_bytes(), s.documents, train.tokens + val.tokens,
                s.seconds});
  }
  if (s.documents == 0)
    throw DataFileError(fmt::format("{}: the corpus holds no document with text",
                                    corpus.files().size() == 1 ? corpus.files()[0] : "inputs"));
  train.finish(s.files);
  val.finish(s.files);
  std::sort(s.files.begin(), s.files.end());
  staging.commit();
  s.train_documents = train.documents;
  s.val_documents = val.documents;
  s.train_tokens = train.tokens;
  s.val_tokens = val.tokens;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace hybrid::engine
