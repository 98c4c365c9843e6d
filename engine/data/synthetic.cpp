#include "engine/data/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "engine/data/data_file_error.h"
#include "engine/data/token_shard.h"

namespace hybrid::engine {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// xoshiro256**: a small self-contained generator, so streams are identical on
// every platform and standard library.
uint64_t xoshiro_next(uint64_t* s) {
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
  return result;
}

struct Rng {
  uint64_t s[4];
  explicit Rng(uint64_t seed) {
    for (auto& w : s) w = splitmix64(seed);
  }
  uint64_t next() { return xoshiro_next(s); }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }                // [0, 1)
  uint32_t below(uint32_t n) { return uint32_t(((next() >> 32) * n) >> 32); }  // [0, n)
};

double xlogx(double p) { return p > 0.0 ? p * std::log(p) : 0.0; }

void check_spec(const SyntheticSpec& spec) {
  const int v = spec.vocab_size, k = spec.branching;
  if (v < 2 || v > 65536)
    throw std::invalid_argument(
        fmt::format("synthetic data: vocab_size must be in 2..65536 (uint16 "
                    "tokens), got {}",
                    v));
  if (k < 1 || k > v)
    throw std::invalid_argument(
        fmt::format("synthetic data: branching must be in 1..vocab_size ({}), got {}", v, k));
  if (!(spec.noise > 0.0 && spec.noise <= 1.0))
    throw std::invalid_argument(
        fmt::format("synthetic data: noise must be in (0, 1], got {}", spec.noise));
}

// Stationary distribution of the chain (k successors a row with their weights,
// plus uniform noise eps) by power iteration; the noise term makes it contract
// by at least (1 - eps) per step.
std::vector<double> stationary_distribution(const std::vector<uint16_t>& succ,
                                            const std::vector<double>& weight, int v, int k,
                                            double eps) {
  const double base = eps / v;
  std::vector<double> pi(static_cast<size_t>(v), 1.0 / v), next(static_cast<size_t>(v));
  for (int iter = 0; iter < 200000; ++iter) {
    std::fill(next.begin(), next.end(), base);
    for (int i = 0; i < v; ++i) {
      const double mass = (1.0 - eps) * pi[size_t(i)];
      for (int j = 0; j < k; ++j) next[succ[size_t(i) * k + j]] += mass * weight[size_t(i) * k + j];
    }
    double diff = 0.0;
    for (int i = 0; i < v; ++i) diff += std::fabs(next[size_t(i)] - pi[size_t(i)]);
    pi.swap(next);
    if (diff < 1e-13) break;
  }
  return pi;
}

}  // namespace

uint64_t synthetic_stream_seed(uint64_t seed, int stream) {
  uint64_t x = seed ^ (0x5851f42d4c957f2dull * uint64_t(stream + 1));
  return splitmix64(x);
}

MarkovChain::MarkovChain(const SyntheticSpec& spec) : spec_(spec) {
  check_spec(spec);
  const int v = spec.vocab_size, k = spec.branching;
  Rng rng(synthetic_stream_seed(spec.seed, -1));
  succ_.resize(size_t(v) * k);
  weight_.resize(size_t(v) * k);
  cumul_.resize(size_t(v) * k);
  std::vector<uint32_t> mark(size_t(v), 0);  // mark[t] == row + 1: t already chosen in this row
  for (int i = 0; i < v; ++i) {
    uint16_t* s = &succ_[size_t(i) * k];
    // Floyd's algorithm: k distinct successors in O(k).
    int n = 0;
    for (int j = v - k; j < v; ++j) {
      uint32_t t = rng.below(uint32_t(j) + 1);
      if (mark[t] == uint32_t(i) + 1) t = uint32_t(j);
      mark[t] = uint32_t(i) + 1;
      s[n++] = uint16_t(t);
    }
    // Dirichlet(1) weights: normalised exponential draws.
    double* w = &weight_[size_t(i) * k];
    double sum = 0.0;
    for (int j = 0; j < k; ++j) sum += (w[j] = -std::log(1.0 - rng.uniform()));
    double run = 0.0;
    for (int j = 0; j < k; ++j) {
      w[j] /= sum;
      run += w[j];
      cumul_[size_t(i) * k + j] = run;
    }
    cumul_[size_t(i) * k + k - 1] = 1.0;
  }

  stationary_ = stationary_distribution(succ_, weight_, v, k, spec.noise);
  const double eps = spec.noise, base = eps / v;

  // Row entropy: the k successors carry (1-eps)·w + eps/V, the other V-k tokens eps/V.
  for (int i = 0; i < v; ++i) {
    double h = -double(v - k) * xlogx(base);
    for (int j = 0; j < k; ++j) h -= xlogx((1.0 - eps) * weight_[size_t(i) * k + j] + base);
    entropy_rate_ += stationary_[size_t(i)] * h;
    stationary_entropy_ -= xlogx(stationary_[size_t(i)]);
  }
}

double MarkovChain::transition(int from, int to) const {
  const int k = spec_.branching;
  double p = spec_.noise / spec_.vocab_size;
  for (int j = 0; j < k; ++j)
    if (succ_[size_t(from) * k + j] == to) p += (1.0 - spec_.noise) * weight_[size_t(from) * k + j];
  return p;
}

std::span<const uint16_t> MarkovChain::successors(int from) const {
  return {&succ_[size_t(from) * spec_.branching], size_t(spec_.branching)};
}

MarkovStream::MarkovStream(const MarkovChain& chain, uint64_t stream_seed) : chain_(chain) {
  uint64_t x = stream_seed;
  for (auto& w : s_) w = splitmix64(x);
  state_ = int(next() % uint64_t(chain.spec_.vocab_size));
}

uint64_t MarkovStream::next() { return xoshiro_next(s_); }

void MarkovStream::generate(std::span<uint16_t> out) {
  const int v = chain_.spec_.vocab_size, k = chain_.spec_.branching;
  const double eps = chain_.spec_.noise;
  const double* cumul = chain_.cumul_.data();
  const uint16_t* succ = chain_.succ_.data();
  // Local state: the loop is one dependent chain of loads, keep it in registers.
  uint64_t s[4] = {s_[0], s_[1], s_[2], s_[3]};
  int state = state_;
  for (auto& tok : out) {
    const double u = double(xoshiro_next(s) >> 11) * 0x1.0p-53;
    if (u < eps) {
      state = int(((xoshiro_next(s) >> 32) * uint64_t(v)) >> 32);
    } else {
      // Given u >= eps, (u - eps) / (1 - eps) is uniform on [0, 1): reuse it.
      const double r = (u - eps) / (1.0 - eps);
      const double* c = cumul + size_t(state) * k;
      // The successor is the number of running sums <= r (the last is 1 > r).
      int j = 0;
      if (k <= 16) {
        for (int i = 0; i < k - 1; ++i) j += r >= c[i];  // branch-free for small rows
      } else {
        j = int(std::upper_bound(c, c + k - 1, r) - c);
      }
      state = succ[size_t(state) * k + j];
    }
    tok = uint16_t(state);
  }
  std::copy(s, s + 4, s_);
  state_ = state;
}

void UnigramCounter::add(std::span<const uint16_t> tokens) {
  for (uint16_t t : tokens) ++counts_.at(t);
  total_ += int64_t(tokens.size());
}

double UnigramCounter::entropy() const {
  if (total_ == 0) return 0.0;
  double h = 0.0;
  for (int64_t c : counts_) h -= xlogx(double(c) / double(total_));
  return h;
}

SyntheticData make_synthetic_data(const SyntheticSpec& spec, int64_t train_tokens,
                                  int64_t val_tokens) {
  if (train_tokens <= 0 || val_tokens < 0)
    throw std::invalid_argument(
        fmt::format("synthetic data: need train_tokens > 0 and val_tokens >= 0, got {} and {}",
                    train_tokens, val_tokens));
  const MarkovChain chain(spec);
  SyntheticData d;
  std::vector<uint16_t> train(static_cast<size_t>(train_tokens));
  std::vector<uint16_t> val(static_cast<size_t>(val_tokens));
  MarkovStream(chain, synthetic_stream_seed(spec.seed, 0)).generate(train);
  MarkovStream(chain, synthetic_stream_seed(spec.seed, 1)).generate(val);
  UnigramCounter counter(spec.vocab_size);
  counter.add(train);
  d.unigram_entropy = counter.entropy();
  d.entropy_rate = chain.entropy_rate();
  d.train = TokenDataset::from_tokens(std::move(train), "synthetic train");
  d.val = TokenDataset::from_tokens(std::move(val), "synthetic val");
  return d;
}

SyntheticShards write_synthetic_shards(
    const std::string& dir, const SyntheticSpec& spec, int64_t train_tokens, int64_t val_tokens,
    int64_t shard_tokens,
    const std::function<void(const std::string&, int64_t, int64_t)>& progress) {
  if (train_tokens <= 0 || val_tokens < 0 || shard_tokens <= 0 || shard_tokens > INT32_MAX)
    throw std::invalid_argument(
        fmt::format("synthetic shards: need tokens > 0, val tokens >= 0 and 0 < shard tokens <= "
                    "{}, got {}, {}, {}",
                    INT32_MAX, train_tokens, val_tokens, shard_tokens));
  // The chain validates the spec (vocabulary, branching, noise): before the
  // folder exists, so that a bad argument leaves nothing behind.
  const MarkovChain chain(spec);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw DataFileError(fmt::format("{}: cannot create directory: {}", dir, ec.message()));

  SyntheticShards out;
  out.train_tokens = train_tokens;
  out.val_tokens = val_tokens;
  out.entropy_rate = chain.entropy_rate();
  UnigramCounter counter(spec.vocab_size);
  const int64_t total = train_tokens + val_tokens;
  int64_t done = 0;
  std::vector<uint16_t> buf;
  for (int stream = 0; stream < 2; ++stream) {
    MarkovStream path(chain, synthetic_stream_seed(spec.seed, stream));
    int64_t left = stream == 0 ? train_tokens : val_tokens;
    for (int index = 0; left > 0; ++index) {
      buf.resize(size_t(std::min(left, shard_tokens)));
      path.generate(buf);
      if (stream == 0) counter.add(buf);
      const std::string file =
          fmt::format("{}/{}_{:06d}.bin", dir, stream == 0 ? "train" : "val", index);
      write_token_shard(file, buf);
      out.files.push_back(file);
      left -= int64_t(buf.size());
      done += int64_t(buf.size());
      if (progress) progress(file, done, total);
    }
  }
  out.unigram_entropy = counter.entropy();
  return out;
}

}  // namespace hybrid::engine
