// Synthetic token streams with learnable structure: a seeded, sparse random
// Markov chain over the vocabulary. From each token the next is, with
// probability 1 - noise, one of `branching` fixed successors (random weights),
// and with probability `noise` uniform over the vocabulary. The noise keeps the
// chain irreducible and aperiodic, so its stationary distribution exists and
// its entropy rate — what a perfect model's loss converges to — is known
// exactly, far below the unigram entropy:
//   H_rate = Σ_i π_i · H(P(·|i)),   H_unigram = H(π)   (nats).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/data/token_dataset.h"

namespace hybrid::engine {

struct SyntheticSpec {
  int vocab_size = 8192;  // 2..65536 (tokens are uint16)
  int branching = 4;      // likely successors per token, 1..vocab_size
  double noise = 0.05;    // (0, 1]: probability of a uniform random next token
  uint64_t seed = 1234;
};

class MarkovChain {
 public:
  explicit MarkovChain(const SyntheticSpec& spec);  // throws std::invalid_argument

  const SyntheticSpec& spec() const { return spec_; }
  double transition(int from, int to) const;  // P(to | from)
  std::span<const uint16_t> successors(int from) const;
  const std::vector<double>& stationary() const { return stationary_; }
  double entropy_rate() const { return entropy_rate_; }              // nats per token
  double stationary_entropy() const { return stationary_entropy_; }  // H(π), nats

 private:
  friend class MarkovStream;
  SyntheticSpec spec_;
  std::vector<uint16_t> succ_;  // [vocab][branching]
  std::vector<double> weight_;  // [vocab][branching], each row sums to 1
  std::vector<double> cumul_;   // running sums of weight_ per row
  std::vector<double> stationary_;
  double entropy_rate_ = 0.0;
  double stationary_entropy_ = 0.0;
};

// One reproducible sample path of a chain; generate() continues where it stopped.
class MarkovStream {
 public:
  MarkovStream(const MarkovChain& chain, uint64_t stream_seed);
  void generate(std::span<uint16_t> out);

 private:
  const MarkovChain& chain_;
  uint64_t s_[4];  // xoshiro256** state
  int state_;      // the last token emitted
  uint64_t next();
};

// Empirical unigram entropy (nats) of a token stream, accumulated in pieces.
class UnigramCounter {
 public:
  explicit UnigramCounter(int vocab_size) : counts_(size_t(vocab_size), 0) {}
  void add(std::span<const uint16_t> tokens);
  double entropy() const;

 private:
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
};

// Stream seeds: the training and validation streams of one spec share the
// chain but not the path.
uint64_t synthetic_stream_seed(uint64_t seed, int stream);  // 0: train, 1: val

struct SyntheticData {
  TokenDataset train;
  TokenDataset val;              // empty when val_tokens == 0
  double unigram_entropy = 0.0;  // measured on the training stream
  double entropy_rate = 0.0;     // analytic
};

// Generates both streams in memory (the "data": "synthetic" path).
SyntheticData make_synthetic_data(const SyntheticSpec& spec, int64_t train_tokens,
                                  int64_t val_tokens);

struct SyntheticShards {
  std::vector<std::string> files;  // train_000000.bin …, then val_000000.bin …
  int64_t train_tokens = 0, val_tokens = 0;
  double unigram_entropy = 0.0;  // measured on the training stream
  double entropy_rate = 0.0;
};

// Writes llm.c shards of at most shard_tokens tokens each into dir (created if
// needed), each atomically. progress(file, tokens_done, tokens_total) is called
// after each file.
SyntheticShards write_synthetic_shards(
    const std::string& dir, const SyntheticSpec& spec, int64_t train_tokens, int64_t val_tokens,
    int64_t shard_tokens,
    const std::function<void(const std::string&, int64_t, int64_t)>& progress = {});

}  // namespace hybrid::engine
