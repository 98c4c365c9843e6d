// Token shards (llm.c format), the concatenated dataset, the stateless data
// loader, and synthetic Markov-chain data — with real files in a temp dir.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/data/data_file_error.h"
#include "engine/data/data_loader.h"
#include "engine/data/data_sources.h"
#include "engine/data/synthetic.h"
#include "engine/data/token_dataset.h"
#include "engine/data/token_shard.h"

namespace {

namespace fs = std::filesystem;
using namespace hybrid::engine;
using ::testing::HasSubstr;

class DataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("hybrid_data_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A raw file: header ints (rest zero) followed by `payload_bytes` bytes of tokens 0,1,2,...
  std::string raw_shard(const std::string& name, std::vector<int32_t> head, size_t payload_bytes) {
    std::array<int32_t, 256> header{};
    for (size_t i = 0; i < head.size(); ++i) header[i] = head[i];
    std::vector<char> payload(payload_bytes);
    for (size_t i = 0; i + 1 < payload_bytes; i += 2) {
      const uint16_t t = uint16_t(i / 2);
      std::memcpy(&payload[i], &t, 2);
    }
    const std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), sizeof(header));
    out.write(payload.data(), std::streamsize(payload.size()));
    return p;
  }

  std::string open_error(const std::string& pattern, int vocab = 0) {
    try {
      TokenDataset::open(pattern, vocab);
    } catch (const DataFileError& e) {
      return e.what();
    }
    return "";
  }

  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

std::vector<uint16_t> iota_tokens(size_t n, uint16_t start, uint16_t mod = 60000) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint16_t((start + i) % mod);
  return v;
}

std::vector<uint32_t> widened(const std::vector<uint16_t>& v) { return {v.begin(), v.end()}; }

// ---- shards ----------------------------------------------------------------

TEST_F(DataTest, ShardRoundTripAndLayout) {
  const auto tokens = iota_tokens(1000, 7);
  const std::string p = path("s.bin");
  write_token_shard(p, tokens);
  EXPECT_EQ(fs::file_size(p), 1024u + 2u * tokens.size());
  // The header as llm.c lays it out, read back by hand.
  std::ifstream in(p, std::ios::binary);
  std::array<int32_t, 256> header{};
  in.read(reinterpret_cast<char*>(header.data()), sizeof(header));
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 1000);
  for (size_t i = 3; i < 256; ++i) ASSERT_EQ(header[i], 0) << i;
  EXPECT_EQ(read_token_shard(p), widened(tokens));
  EXPECT_EQ(listing(), std::vector<std::string>{"s.bin"});  // no temporary file left
}

TEST_F(DataTest, WideShardsHoldTokensPast65535) {
  // llm.c's version 2: uint32 tokens (Llama 3's 128,256-token vocabulary).
  EXPECT_EQ(token_bytes_for_vocab(65536), 2);
  EXPECT_EQ(token_bytes_for_vocab(65537), 4);
  EXPECT_EQ(token_bytes_for_vocab(128256), 4);
  const std::vector<uint32_t> tokens = {0, 65535, 65536, 128255, 7};
  const std::string p = path("wide.bin");
  write_token_shard(p, tokens);
  EXPECT_EQ(fs::file_size(p), 1024u + 4u * tokens.size());
  std::ifstream in(p, std::ios::binary);
  std::array<int32_t, 256> header{};
  in.read(reinterpret_cast<char*>(header.data()), sizeof(header));
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 2);
  EXPECT_EQ(header[2], 5);
  std::array<uint32_t, 5> payload{};
  in.read(reinterpret_cast<char*>(payload.data()), sizeof(payload));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), tokens.begin()));
  EXPECT_EQ(read_token_shard(p), tokens);
  EXPECT_EQ(open_error(p, 128255),
            p + ": token 128255 at index 3 is out of range for vocab_size 128255");
}

TEST_F(DataTest, DatasetMixesNarrowAndWideShards) {
  const auto a = iota_tokens(7, 100);
  const std::vector<uint32_t> b = {70000, 70001, 70002};
  write_token_shard(path("train_000000.bin"), a);
  write_token_shard(path("train_000001.bin"), b);
  const TokenDataset d = TokenDataset::open(path("train_*.bin"), 70003);
  std::vector<uint32_t> expected = widened(a);
  expected.insert(expected.end(), b.begin(), b.end());
  ASSERT_EQ(d.size(), 10);
  for (int64_t i = 0; i < d.size(); ++i) ASSERT_EQ(d.at(i), expected[size_t(i)]) << i;
  std::vector<int32_t> out(25, -1);
  d.copy_wrapped(4, int64_t(out.size()), out.data());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(uint32_t(out[i]), expected[(4 + i) % 10]) << i;
  // A wide shard is sized by 4-byte tokens: 10 declared tokens need 40 bytes.
  const std::string t = raw_shard("train_000002.bin", {20240520, 2, 10}, 20);
  EXPECT_THAT(open_error(t), HasSubstr(t + ": truncated: the header declares 10 tokens (40 bytes) "
                                           "but only 20 bytes follow it"));
}

TEST_F(DataTest, ShardWriteFailuresLeaveNothingBehind) {
  // A regular file where the folder should be: the folder cannot be created.
  std::ofstream(path("blocker")) << "x";
  const std::string p = path("blocker/s.bin");
  try {
    write_token_shard(p, iota_tokens(10, 0));
    ADD_FAILURE() << "wrote below a regular file";
  } catch (const DataFileError& e) {
    EXPECT_THAT(e.what(), HasSubstr(p));
  }
  EXPECT_THROW(write_token_shard(path("empty.bin"), std::span<const uint16_t>{}), DataFileError);
  EXPECT_EQ(listing(), std::vector<std::string>{"blocker"});
}

TEST_F(DataTest, ShardWriteCreatesMissingFolders) {
  const std::string p = path("new/dir/s.bin");
  write_token_shard(p, iota_tokens(10, 0));
  EXPECT_EQ(read_token_shard(p), widened(iota_tokens(10, 0)));
  EXPECT_EQ(listing(), std::vector<std::string>{"new"});
}

TEST_F(DataTest, CorruptShardsAreRejectedWithTheReason) {
  struct Case {
    std::string name;
    std::vector<int32_t> header;
    size_t payload;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"magic.bin", {20240326, 1, 10}, 20, "bad magic 20240326"},
      {"version.bin",
       {20240520, 3, 10},
       20,
       "unsupported token shard version 3 (supported: 1 for uint16 tokens, 2 for uint32)"},
      {"empty.bin",
       {20240520, 1, 0},
       0,
       "header declares 0 tokens; a shard must hold at least one"},
      {"negative.bin", {20240520, 1, -4}, 0, "header declares -4 tokens"},
      {"truncated.bin",
       {20240520, 1, 10},
       13,
       "truncated: the header declares 10 tokens (20 bytes) but only 13 bytes follow it"},
      {"trailing.bin",
       {20240520, 1, 10},
       24,
       "size mismatch: the header declares 10 tokens (20 bytes) but 24 bytes follow it"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = raw_shard(c.name, c.header, c.payload);
    const std::string msg = open_error(p);
    EXPECT_THAT(msg, HasSubstr(p + ": "));
    EXPECT_THAT(msg, HasSubstr(c.reason));
  }
  // Shorter than a header.
  const std::string tiny = path("tiny.bin");
  std::ofstream(tiny, std::ios::binary) << "abc";
  EXPECT_THAT(open_error(tiny), HasSubstr(tiny + ": too small for a token shard (3 bytes"));
  // Missing file, and a glob matching nothing.
  EXPECT_THAT(open_error(path("absent.bin")), HasSubstr("no token shards match this glob"));
  const std::string nothing = path("train_*.bin");
  EXPECT_EQ(open_error(nothing), nothing + ": no token shards match this glob");
  EXPECT_THAT(
      [&] {
        try {
          MappedTokenShard m(path("absent.bin"));
        } catch (const DataFileError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr(path("absent.bin") + ": cannot open token shard: No such file or directory"));
}

TEST_F(DataTest, TokensAreCheckedAgainstTheVocabulary) {
  std::vector<uint16_t> tokens(100, 5);
  tokens[42] = 300;
  write_token_shard(path("v.bin"), tokens);
  EXPECT_EQ(open_error(path("v.bin"), 256),
            path("v.bin") + ": token 300 at index 42 is out of range for vocab_size 256");
  EXPECT_EQ(TokenDataset::open(path("v.bin"), 301).size(), 100);
  EXPECT_EQ(TokenDataset::open(path("v.bin")).size(), 100);  // no vocabulary: no check
}

// ---- dataset -----------------------------------------------------------------

TEST_F(DataTest, DatasetConcatenatesShardsInNameOrder) {
  // Written out of order; sizes differ so boundaries are exercised.
  const auto a = iota_tokens(7, 100), b = iota_tokens(5, 200), c = iota_tokens(11, 300);
  write_token_shard(path("train_000002.bin"), c);
  write_token_shard(path("train_000000.bin"), a);
  write_token_shard(path("train_000001.bin"), b);
  write_token_shard(path("val_000000.bin"), iota_tokens(3, 9));
  const TokenDataset d = TokenDataset::open(path("train_*.bin"));
  std::vector<uint16_t> expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  expected.insert(expected.end(), c.begin(), c.end());
  ASSERT_EQ(d.size(), int64_t(expected.size()));
  EXPECT_EQ(d.files(), (std::vector<std::string>{path("train_000000.bin"), path("train_000001.bin"),
                                                 path("train_000002.bin")}));
  for (int64_t i = 0; i < d.size(); ++i) ASSERT_EQ(d.at(i), expected[size_t(i)]) << i;
  // Every window, including ones that wrap past the end more than once.
  const int64_t n = d.size();
  for (int64_t start :
       {int64_t(0), int64_t(5), int64_t(6), int64_t(12), int64_t(22), int64_t(23), int64_t(1000)}) {
    for (int64_t count : {int64_t(1), int64_t(4), int64_t(23), int64_t(50)}) {
      std::vector<int32_t> out(size_t(count), -1);
      d.copy_wrapped(start, count, out.data());
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(out[size_t(i)], expected[size_t((start + i) % n)]) << start << "+" << i;
    }
  }
  EXPECT_THROW(d.at(n), std::out_of_range);
  // One bad shard in the glob spoils the whole dataset, and the message names it.
  raw_shard("train_000003.bin", {20240520, 1, 10}, 4);
  EXPECT_THAT(open_error(path("train_*.bin")), HasSubstr(path("train_000003.bin") + ": truncated"));
}

// ---- loader ------------------------------------------------------------------

TEST(DataLoader, SamplesFollowTheStatelessFormula) {
  // Stream token i has value i mod 997, so a window's start is readable from its first token.
  const int64_t n = 997;
  std::vector<uint16_t> stream(n);
  for (int64_t i = 0; i < n; ++i) stream[size_t(i)] = uint16_t(i);
  const TokenDataset data = TokenDataset::from_tokens(stream);
  const int b = 3, T = 8, gas = 2, W = 4;
  for (int r = 0; r < W; ++r) {
    const DataLoader loader(data, {b, T, gas, W, r});
    std::vector<int32_t> x(size_t(b) * T), y(size_t(b) * T);
    for (int64_t s : {int64_t(0), int64_t(1), int64_t(5), int64_t(123456)}) {
      for (int k = 0; k < gas; ++k) {
        loader.fill(s, k, x.data(), y.data());
        for (int i = 0; i < b; ++i) {
          const int64_t j =
              s * (b * gas * W) + (int64_t(k) * W + r) * b + i;  // the documented index
          for (int t = 0; t < T; ++t) {
            ASSERT_EQ(x[size_t(i) * T + t], (j * T + t) % n) << "s" << s << " k" << k << " r" << r;
            ASSERT_EQ(y[size_t(i) * T + t], (j * T + t + 1) % n);
          }
        }
      }
    }
  }
}

TEST(DataLoader, RanksAreDisjointAndMatchOneProcessWithMoreAccumulation) {
  const TokenDataset data = TokenDataset::from_tokens(iota_tokens(50'000, 0, 50'000));
  const int b = 2, T = 16, gas = 3, W = 4;
  for (int64_t s = 0; s < 4; ++s) {
    // W ranks × gas micro-steps.
    std::map<int64_t, std::vector<int32_t>> by_sample;  // sample index → inputs
    std::set<int64_t> seen;
    for (int r = 0; r < W; ++r) {
      const DataLoader loader(data, {b, T, gas, W, r});
      std::vector<int32_t> x(size_t(b) * T), y(size_t(b) * T);
      for (int k = 0; k < gas; ++k) {
        loader.fill(s, k, x.data(), y.data());
        for (int i = 0; i < b; ++i) {
          const int64_t j = loader.sample_index(s, k, i);
          EXPECT_TRUE(seen.insert(j).second) << "sample " << j << " read twice";
          by_sample[j].assign(x.begin() + i * T, x.begin() + (i + 1) * T);
        }
      }
    }
    // One process, gas·W micro-steps: exactly the same samples with the same tokens.
    const DataLoader single(data, {b, T, gas * W, 1, 0});
    std::vector<int32_t> x(size_t(b) * T), y(size_t(b) * T);
    std::set<int64_t> single_seen;
    for (int k = 0; k < gas * W; ++k) {
      single.fill(s, k, x.data(), y.data());
      for (int i = 0; i < b; ++i) {
        const int64_t j = single.sample_index(s, k, i);
        single_seen.insert(j);
        ASSERT_TRUE(by_sample.count(j));
        EXPECT_EQ(by_sample[j], std::vector<int32_t>(x.begin() + i * T, x.begin() + (i + 1) * T));
      }
    }
    EXPECT_EQ(seen, single_seen);
    // The step covers a contiguous block of samples.
    EXPECT_EQ(*seen.begin(), s * b * gas * W);
    EXPECT_EQ(*seen.rbegin(), (s + 1) * b * gas * W - 1);
  }
}

TEST(DataLoader, RejectsImpossibleShapes) {
  const TokenDataset data = TokenDataset::from_tokens(iota_tokens(10, 0), "tiny stream");
  EXPECT_THROW(DataLoader(data, BatchShape{1, 4, 1, 2, 2}), std::invalid_argument);  // rank 2 of 2
  EXPECT_THROW(DataLoader(data, BatchShape{0, 4, 1, 1, 0}), std::invalid_argument);
  try {
    DataLoader(data, BatchShape{1, 10, 1, 1, 0});  // needs 11 tokens
    ADD_FAILURE();
  } catch (const DataFileError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("tiny stream: 10 tokens, fewer than one sample of seq_len + 1 = 11"));
  }
  const DataLoader ok(data, BatchShape{1, 4, 2, 1, 0});
  EXPECT_THROW(ok.sample_index(0, 2, 0), std::out_of_range);  // micro-step 2 of gas 2
}

// ---- synthetic data ----------------------------------------------------------

TEST(Synthetic, ChainIsAValidDistributionWithItsStationaryPoint) {
  const MarkovChain chain({64, 4, 0.05, 7});
  const auto& pi = chain.stationary();
  double total = 0.0;
  std::vector<double> next(64, 0.0);
  for (int i = 0; i < 64; ++i) {
    double row = 0.0;
    for (int j = 0; j < 64; ++j) {
      row += chain.transition(i, j);
      next[size_t(j)] += pi[size_t(i)] * chain.transition(i, j);
    }
    EXPECT_NEAR(row, 1.0, 1e-12) << "row " << i;
    total += pi[size_t(i)];
    const auto succ = chain.successors(i);
    EXPECT_EQ(std::set<uint16_t>(succ.begin(), succ.end()).size(), 4u) << "distinct successors";
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
  for (int j = 0; j < 64; ++j) EXPECT_NEAR(next[size_t(j)], pi[size_t(j)], 1e-12);  // π P = π
}

TEST(Synthetic, EntropyRateMatchesClosedFormsAndTheGeneratedStream) {
  // noise = 1: every token uniform, entropy rate = log V exactly.
  EXPECT_NEAR(MarkovChain({100, 3, 1.0, 1}).entropy_rate(), std::log(100.0), 1e-12);
  // branching = 1: each row is one successor with 1 - ε + ε/V, the rest ε/V; the same for every
  // row.
  {
    const double v = 50, e = 0.2, top = 1 - e + e / v, rest = e / v;
    const double h = -top * std::log(top) - (v - 1) * rest * std::log(rest);
    EXPECT_NEAR(MarkovChain({50, 1, 0.2, 3}).entropy_rate(), h, 1e-12);
  }
  // Against a long sample path: plug-in estimates of the conditional (bigram) and
  // unigram entropies. Bias is about cells / (2N) ≈ 0.001 nats here; tolerance 0.02.
  const SyntheticSpec spec{64, 4, 0.05, 11};
  const MarkovChain chain(spec);
  std::vector<uint16_t> s(2'000'000);
  MarkovStream(chain, 99).generate(s);
  std::vector<double> pair(64 * 64, 0.0), first(64, 0.0), uni(64, 0.0);
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    pair[size_t(s[i]) * 64 + s[i + 1]] += 1;
    first[s[i]] += 1;
  }
  for (uint16_t t : s) uni[t] += 1;
  double h_cond = 0.0, h_uni = 0.0;
  const double n = double(s.size() - 1);
  for (int a = 0; a < 64; ++a)
    for (int c = 0; c < 64; ++c)
      if (double p = pair[size_t(a) * 64 + c]; p > 0)
        h_cond -= p / n * std::log(p / first[size_t(a)]);
  for (double c : uni)
    if (c > 0) h_uni -= c / double(s.size()) * std::log(c / double(s.size()));
  EXPECT_NEAR(h_cond, chain.entropy_rate(), 0.02);
  EXPECT_NEAR(h_uni, chain.stationary_entropy(), 0.02);
  UnigramCounter counter(64);
  counter.add(s);
  EXPECT_NEAR(counter.entropy(), h_uni, 1e-9);
  // The structure to learn: the entropy rate is far below the unigram entropy.
  EXPECT_LT(chain.entropy_rate(), 0.6 * chain.stationary_entropy());
}

TEST(Synthetic, StreamsAreReproducibleAndSeedDependent) {
  const SyntheticSpec spec{1000, 4, 0.05, 5};
  const auto d1 = make_synthetic_data(spec, 5000, 700);
  const auto d2 = make_synthetic_data(spec, 5000, 700);
  const auto d3 = make_synthetic_data({1000, 4, 0.05, 6}, 5000, 700);
  ASSERT_EQ(d1.train.size(), 5000);
  ASSERT_EQ(d1.val.size(), 700);
  int same_seed_diff = 0, other_seed_diff = 0, train_val_diff = 0;
  for (int64_t i = 0; i < 5000; ++i) {
    ASSERT_LT(d1.train.at(i), 1000);
    same_seed_diff += d1.train.at(i) != d2.train.at(i);
    other_seed_diff += d1.train.at(i) != d3.train.at(i);
    if (i < 700) train_val_diff += d1.train.at(i) != d1.val.at(i);
  }
  EXPECT_EQ(same_seed_diff, 0);
  EXPECT_GT(other_seed_diff, 4000);
  EXPECT_GT(train_val_diff, 500);  // validation is a different path of the same chain
  EXPECT_EQ(d1.entropy_rate, MarkovChain(spec).entropy_rate());
  EXPECT_THROW(MarkovChain({70000, 4, 0.05, 1}), std::invalid_argument);
  EXPECT_THROW(MarkovChain({100, 0, 0.05, 1}), std::invalid_argument);
  EXPECT_THROW(MarkovChain({100, 4, 0.0, 1}), std::invalid_argument);
}

TEST_F(DataTest, SyntheticShardsEqualTheInMemoryStreams) {
  const SyntheticSpec spec{512, 3, 0.1, 77};
  std::vector<std::string> progress;
  const auto r = write_synthetic_shards(
      path("synth"), spec, 2500, 900, 1000,
      [&](const std::string& f, int64_t, int64_t) { progress.push_back(f); });
  const std::vector<std::string> files = {
      path("synth/train_000000.bin"), path("synth/train_000001.bin"),
      path("synth/train_000002.bin"), path("synth/val_000000.bin")};
  EXPECT_EQ(r.files, files);
  EXPECT_EQ(progress, files);
  const auto shard_sizes = std::vector<int64_t>{1000, 1000, 500, 900};
  for (size_t i = 0; i < files.size(); ++i)
    EXPECT_EQ(int64_t(read_token_shard(files[i]).size()), shard_sizes[i]);
  const auto mem = make_synthetic_data(spec, 2500, 900);
  const TokenDataset train = TokenDataset::open(path("synth/train_*.bin"), 512);
  const TokenDataset val = TokenDataset::open(path("synth/val_*.bin"), 512);
  ASSERT_EQ(train.size(), 2500);
  ASSERT_EQ(val.size(), 900);
  for (int64_t i = 0; i < 2500; ++i) ASSERT_EQ(train.at(i), mem.train.at(i)) << i;
  for (int64_t i = 0; i < 900; ++i) ASSERT_EQ(val.at(i), mem.val.at(i)) << i;
  EXPECT_NEAR(r.unigram_entropy, mem.unigram_entropy, 1e-12);
  EXPECT_EQ(r.entropy_rate, mem.entropy_rate);
}

TEST_F(DataTest, DataSourcesFollowTheConfig) {
  Config c;
  c.model.vocab_size = 256;
  c.seed = 3;
  c.data.synthetic_tokens = 4096;
  c.data.synthetic_val_tokens = 512;
  const DataSources s = open_data_sources(c);
  EXPECT_TRUE(s.synthetic);
  EXPECT_EQ(s.train.size(), 4096);
  EXPECT_EQ(s.val.size(), 512);
  EXPECT_NEAR(s.entropy_rate, MarkovChain({256, 4, double(0.05f), 3}).entropy_rate(), 1e-12);
  EXPECT_GT(s.unigram_entropy, s.entropy_rate);

  write_token_shard(path("t_000000.bin"), iota_tokens(300, 0, 256));
  c.data.synthetic = false;
  c.data.train = path("t_*.bin");
  const DataSources f = open_data_sources(c);
  EXPECT_FALSE(f.synthetic);
  EXPECT_EQ(f.train.size(), 300);
  EXPECT_TRUE(f.val.empty());
  EXPECT_TRUE(std::isnan(f.entropy_rate));
  c.model.vocab_size = 100;  // the shard holds tokens up to 255
  EXPECT_THROW(open_data_sources(c), DataFileError);
}

// ---- hybrid-data CLI -----------------------------------------------------------

struct RunResult {
  int status;
  std::string output;  // stdout and stderr
};

RunResult run(const std::string& command) {
  RunResult r{-1, ""};
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  const int rc = ::pclose(pipe);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

double number_after(const std::string& text, const std::string& label) {
  const auto pos = text.find(label);
  if (pos == std::string::npos) return std::nan("");
  return std::stod(text.substr(pos + label.size()));
}

TEST_F(DataTest, HybridDataSynthWritesShardsAndPrintsEntropies) {
  const std::string tool = std::string(HYBRID_BINARY_DIR) + "/engine/hybrid-data";
  ASSERT_TRUE(fs::exists(tool)) << tool << " is a dependency of this test executable";
  const std::string out = path("cli");
  const RunResult r =
      run(tool + " synth --out " + out +
          " --tokens 30000 --vocab 300 --seed 9 --shard-tokens 16000 --val-tokens 5000");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("train_000001.bin"));
  // The files hold exactly the library's streams for the same spec.
  const SyntheticSpec spec{300, 4, 0.05, 9};
  const auto mem = make_synthetic_data(spec, 30000, 5000);
  const TokenDataset train = TokenDataset::open(out + "/train_*.bin", 300);
  ASSERT_EQ(train.files().size(), 2u);
  ASSERT_EQ(train.size(), 30000);
  for (int64_t i = 0; i < train.size(); i += 97) ASSERT_EQ(train.at(i), mem.train.at(i)) << i;
  EXPECT_EQ(TokenDataset::open(out + "/val_*.bin").size(), 5000);
  // Printed with 4 decimals.
  EXPECT_NEAR(number_after(r.output, "unigram entropy:"), mem.unigram_entropy, 1e-4);
  EXPECT_NEAR(number_after(r.output, "entropy rate:"), mem.entropy_rate, 1e-4);
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_EQ(e.path().extension(), ".bin") << "left behind: " << e.path();

  const RunResult info = run(tool + " info " + out + "/val_000000.bin");
  EXPECT_EQ(info.status, 0) << info.output;
  EXPECT_THAT(info.output,
              HasSubstr("llm.c token shard (version 1, 16-bit tokens), 5.00 K tokens"));

  const RunResult bad = run(tool + " synth --out " + out + " --tokens 100 --vocab 300 --noise 0");
  EXPECT_NE(bad.status, 0);
  EXPECT_THAT(bad.output, HasSubstr("noise must be in (0, 1], got 0"));
  const RunResult missing = run(tool + " synth --out " + out + " --vocab 300");
  EXPECT_NE(missing.status, 0);
  EXPECT_THAT(missing.output, HasSubstr("--tokens"));
  const RunResult corrupt = run(tool + " info " + raw_shard("bad.bin", {1, 1, 1}, 2));
  EXPECT_NE(corrupt.status, 0);
  EXPECT_THAT(corrupt.output, HasSubstr("bad.bin: bad magic 1"));
}

}  // namespace
