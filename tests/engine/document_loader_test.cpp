// The document loader over real llm.c shards: every document read whole (its
// pieces in order), targets and padding, the shuffled order per epoch and seed,
// dynamic batching's budget and minimum, ranks reading disjoint units that
// together equal one process's, positions across epochs, and named errors.
#include "engine/data/document_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/data/data_file_error.h"
#include "engine/data/document_order.h"
#include "engine/data/dynamic_batching.h"
#include "tests/common/error_of.h"
#include "tests/common/temp_dir.h"
#include "tests/engine/document_corpus.h"

namespace {

using namespace hybrid::engine;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace tc = hybrid::engine::test_corpus;

// A unit as read back from the arrays: where it comes from (its tokens say).
struct ReadUnit {
  int doc = 0;
  int offset = 0;
  int length = 0;
  auto operator<=>(const ReadUnit&) const = default;
};

// One micro-batch as this rank filled it.
struct ReadMicroBatch {
  std::vector<int32_t> inputs, targets, positions;
  std::vector<tc::PackedSegment> segments;
};

struct EpochRead {
  std::map<int64_t, ReadMicroBatch> by_index;  // M's index → what this rank read
  std::vector<StepCounts> counts;              // per step
};

class DocumentLoaderTest : public ::testing::Test {
 protected:
  // Writes documents of these lengths as two shards; remembers the stream.
  std::string write_corpus(const std::vector<int>& lengths) {
    lengths_ = lengths;
    stream_ = tc::corpus_tokens(lengths);
    starts_.clear();
    int64_t at = 0;
    for (int l : lengths) {
      starts_.push_back(at);
      at += l;
    }
    return tc::write_two_shards(tmp_.path() / "shards", stream_);
  }

  // What `loader` fills for every step of `epoch`.
  EpochRead read_epoch(DocumentLoader& loader, int64_t epoch) {
    const auto& o = loader.options();
    const size_t n = size_t(o.micro_batch) * size_t(o.seq_len);
    EpochRead read;
    for (int64_t j = 0; j < loader.steps_in_epoch(epoch); ++j) {
      std::vector<ReadMicroBatch> mbs(size_t(o.grad_accum));
      std::vector<MicroBatchArrays> arrays;
      for (auto& mb : mbs) {
        mb.inputs.assign(n, 12345);
        mb.targets.assign(n, 12345);
        mb.positions.assign(n, 12345);
        arrays.push_back({mb.inputs.data(), mb.targets.data(), mb.positions.data()});
      }
      read.counts.push_back(loader.fill({epoch, j}, arrays));
      for (int k = 0; k < o.grad_accum; ++k) {
        ReadMicroBatch& mb = mbs[size_t(k)];
        mb.segments = tc::read_segments(mb.inputs.data(), mb.targets.data(), mb.positions.data(),
                                        o.micro_batch, o.seq_len, 0);
        read.by_index[loader.micro_batch_index(j, k)] = std::move(mb);
      }
    }
    return read;
  }

  // The unit a real segment holds, checked token by token against the stream:
  // inputs are the stream from the unit's start, targets the stream one further
  // (wrapping at its end).
  ReadUnit identify(const tc::PackedSegment& s) const {
    ReadUnit u;
    u.length = int(s.inputs.size());
    const int32_t named = s.inputs[0] == 0 ? s.inputs.at(1) : s.inputs[0];
    u.doc = tc::doc_of(named);
    u.offset = s.inputs[0] == 0 ? 0 : tc::offset_of(named);
    const int64_t p = starts_.at(size_t(u.doc)) + u.offset;
    const int64_t n = int64_t(stream_.size());
    for (int i = 0; i < u.length; ++i) {
      EXPECT_EQ(s.inputs[size_t(i)], stream_.at(size_t(p + i))) << "doc " << u.doc;
      EXPECT_EQ(s.targets[size_t(i)], stream_.at(size_t((p + i + 1) % n))) << "doc " << u.doc;
    }
    EXPECT_LE(u.offset + u.length, lengths_.at(size_t(u.doc))) << "a unit runs past its document";
    return u;
  }

  // The units of a micro-batch, in row order.
  std::vector<ReadUnit> units_of(const ReadMicroBatch& mb) const {
    std::vector<ReadUnit> units;
    for (const auto& s : mb.segments)
      if (!s.padding) units.push_back(identify(s));
    return units;
  }

  hybrid::test::TempDir tmp_;
  std::vector<int> lengths_;
  std::vector<uint16_t> stream_;
  std::vector<int64_t> starts_;
};

DocumentLoaderOptions shape(int B, int T, int gas = 1, int W = 1, int r = 0) {
  DocumentLoaderOptions o;
  o.micro_batch = B;
  o.seq_len = T;
  o.grad_accum = gas;
  o.world_size = W;
  o.rank = r;
  o.seed = 5;
  return o;
}

// Independent of the packer: can these unit lengths be placed greedily in B rows of T?
bool fits_rows(const std::vector<int>& lengths, int B, int T) {
  int rows = lengths.empty() ? 0 : 1, used = 0;
  for (int l : lengths) {
    if (used + l > T) {
      ++rows;
      used = 0;
    }
    used += l;
  }
  return rows <= B;
}

BatchCounts counted(const ReadMicroBatch& mb) {
  BatchCounts c;
  for (const auto& s : mb.segments) c.sequences += !s.padding;
  for (int32_t t : mb.targets) (t >= 0 ? c.real_tokens : c.padded_tokens) += 1;
  return c;
}

TEST_F(DocumentLoaderTest, EveryDocumentIsReadWholeInTheEpochsShuffledOrder) {
  const auto lengths = tc::random_lengths(300, 2, 40, 1);  // up to 3 pieces of T = 16
  DocumentLoader loader(TokenDataset::open(write_corpus(lengths)), shape(4, 16));
  EXPECT_EQ(loader.separator(), 0u);  // the stream's first token
  ASSERT_EQ(loader.documents().count(), 300);
  const EpochRead read = read_epoch(loader, 0);
  std::vector<int> covered(300, 0), order;
  BatchCounts total;
  for (const auto& [m, mb] : read.by_index) {
    EXPECT_EQ(counted(mb), read.counts.at(size_t(m)).rank) << "micro-batch " << m;
    total += counted(mb);
    for (const ReadUnit& u : units_of(mb)) {
      ASSERT_LE(u.length, 16);
      if (u.offset == 0) {
        EXPECT_EQ(covered[size_t(u.doc)], 0) << "document " << u.doc << " read twice";
        order.push_back(u.doc);
      } else {  // a later piece: right after the previous piece of the same document
        EXPECT_EQ(order.back(), u.doc);
        EXPECT_EQ(covered[size_t(u.doc)], u.offset);
        EXPECT_EQ(u.offset % 16, 0);
      }
      covered[size_t(u.doc)] += u.length;
    }
  }
  EXPECT_EQ(covered, lengths);  // nothing dropped with gas·W = 1 and rows filling
  const auto expected_order = document_order(300, 5, 0, true);
  EXPECT_EQ(order, std::vector<int>(expected_order.begin(), expected_order.end()));
  int64_t units = 0;
  for (int l : lengths) units += (l + 15) / 16;
  EXPECT_EQ(total.sequences, units);
  EXPECT_EQ(total.real_tokens, int64_t(stream_.size()));
  EXPECT_EQ(total.real_tokens + total.padded_tokens, int64_t(read.by_index.size()) * 4 * 16);
}

TEST_F(DocumentLoaderTest, DynamicBatchesKeepTheBudgetAndTheMinimumAndCloseOnlyWhenFull) {
  DocumentLoaderOptions o = shape(4, 16, 2);
  o.dynamic = {40, 2, 3};  // 2·16 <= 40 <= 4·16
  DocumentLoader loader(TokenDataset::open(write_corpus(tc::random_lengths(400, 2, 40, 2))), o);
  for (int64_t epoch : {0, 1}) {
    const EpochRead read = read_epoch(loader, epoch);
    for (const auto& [m, mb] : read.by_index) {
      const BatchCounts c = counted(mb);
      EXPECT_LE(c.real_tokens, 40) << m;
      EXPECT_GE(c.sequences, 2) << m;
      EXPECT_LE(c.sequences, 3) << m;
      EXPECT_EQ(c.sequences, loader.plan(epoch).sequences(m)) << m;
      EXPECT_EQ(c.real_tokens, loader.plan(epoch).batch_real_tokens.at(size_t(m))) << m;
      // The next micro-batch's first unit did not fit this one.
      if (!read.by_index.count(m + 1)) continue;
      std::vector<int> lengths;
      for (const auto& u : units_of(mb)) lengths.push_back(u.length);
      const int next = int(units_of(read.by_index.at(m + 1)).at(0).length);
      lengths.push_back(next);
      EXPECT_TRUE(c.real_tokens + next > 40 || c.sequences == 3 || !fits_rows(lengths, 4, 16))
          << "micro-batch " << m << " closed early";
    }
    for (size_t j = 0; j < read.counts.size(); ++j) {
      EXPECT_EQ(read.counts[j].global, read.counts[j].rank);  // one rank
      BatchCounts both = counted(read.by_index.at(int64_t(2 * j)));
      both += counted(read.by_index.at(int64_t(2 * j + 1)));
      EXPECT_EQ(read.counts[j].rank, both);
    }
  }
}

TEST_F(DocumentLoaderTest, RanksReadDisjointUnitsThatTogetherAreOneProcesssRead) {
  const std::string glob = write_corpus(tc::random_lengths(500, 2, 40, 3));
  const int W = 3, gas = 2;
  DocumentLoader single(TokenDataset::open(glob), shape(2, 16, gas * W));
  const EpochRead all = read_epoch(single, 0);
  std::map<ReadUnit, int> reads;  // unit → rank
  std::map<int, std::set<int>> ranks_of_doc;
  std::vector<EpochRead> per_rank;
  for (int r = 0; r < W; ++r) {
    DocumentLoader loader(TokenDataset::open(glob), shape(2, 16, gas, W, r));
    ASSERT_EQ(loader.steps_in_epoch(0), single.steps_in_epoch(0));
    per_rank.push_back(read_epoch(loader, 0));
    for (const auto& [m, mb] : per_rank.back().by_index) {
      EXPECT_EQ(m % W, r);
      // The same arrays as the single process's micro-step m of its step.
      EXPECT_EQ(mb.inputs, all.by_index.at(m).inputs) << m;
      EXPECT_EQ(mb.targets, all.by_index.at(m).targets) << m;
      EXPECT_EQ(mb.positions, all.by_index.at(m).positions) << m;
      for (const ReadUnit& u : units_of(mb)) {
        EXPECT_TRUE(reads.emplace(u, r).second) << "unit of document " << u.doc << " read twice";
        ranks_of_doc[u.doc].insert(r);
      }
    }
  }
  EXPECT_EQ(reads.size(), [&] {
    size_t n = 0;
    for (const auto& [m, mb] : all.by_index) n += units_of(mb).size();
    return n;
  }());
  // A document of at most T tokens is one unit, so one rank reads it all.
  for (const auto& [doc, ranks] : ranks_of_doc)
    if (lengths_[size_t(doc)] <= 16) {
      EXPECT_EQ(ranks.size(), 1u) << "document " << doc;
    }
  // The units kept are the epoch's order up to the trimmed tail.
  const auto order = document_order(500, 5, 0, true);
  size_t whole = 0;
  while (whole < order.size() && ranks_of_doc.count(int(order[whole]))) ++whole;
  for (size_t i = whole + 1; i < order.size(); ++i)
    EXPECT_FALSE(ranks_of_doc.count(int(order[i]))) << "read past the dropped tail";
  EXPECT_GT(whole, 400u);
  // Every rank reports the same step totals: the sum of the ranks' own.
  for (size_t j = 0; j < all.counts.size(); ++j) {
    BatchCounts sum;
    for (int r = 0; r < W; ++r) {
      EXPECT_EQ(per_rank[size_t(r)].counts[j].global, all.counts[j].global);
      sum += per_rank[size_t(r)].counts[j].rank;
    }
    EXPECT_EQ(sum, all.counts[j].global);
  }
}

TEST_F(DocumentLoaderTest, EveryInstanceComputesTheSameOrderAndEpochsAndSeedsDiffer) {
  const std::string glob = write_corpus(tc::random_lengths(200, 2, 40, 4));
  DocumentLoader a(TokenDataset::open(glob), shape(2, 16, 2));
  DocumentLoader b(TokenDataset::open(glob), shape(2, 16, 2));
  DocumentLoaderOptions other = shape(2, 16, 2);
  other.seed = 6;
  DocumentLoader c(TokenDataset::open(glob), other);
  DocumentLoaderOptions in_order = shape(2, 16, 2);
  in_order.shuffle = false;
  DocumentLoader d(TokenDataset::open(glob), in_order);
  const auto first_docs = [&](DocumentLoader& loader, int64_t epoch) {
    std::vector<int> docs;
    for (const auto& [m, mb] : read_epoch(loader, epoch).by_index)
      for (const ReadUnit& u : units_of(mb))
        if (u.offset == 0) docs.push_back(u.doc);
    return docs;
  };
  for (int64_t epoch : {0, 1}) {
    const EpochRead ra = read_epoch(a, epoch), rb = read_epoch(b, epoch);
    ASSERT_EQ(ra.by_index.size(), rb.by_index.size());
    for (const auto& [m, mb] : ra.by_index) {
      EXPECT_EQ(mb.inputs, rb.by_index.at(m).inputs);
      EXPECT_EQ(mb.positions, rb.by_index.at(m).positions);
    }
  }
  const auto a0 = first_docs(a, 0);
  EXPECT_NE(a0, first_docs(a, 1));
  EXPECT_NE(a0, first_docs(c, 0));
  const auto d0 = first_docs(d, 0);
  EXPECT_TRUE(std::is_sorted(d0.begin(), d0.end()));
  EXPECT_EQ(d0, first_docs(d, 1));
}

TEST_F(DocumentLoaderTest, PositionAtEqualsWalkingNextAcrossEpochs) {
  DocumentLoaderOptions o = shape(2, 16);
  o.dynamic = {24, 1, 2};
  DocumentLoader loader(TokenDataset::open(write_corpus(tc::random_lengths(60, 2, 30, 5))), o);
  DataPosition walked;
  std::set<int64_t> steps_seen;
  for (int64_t g = 0; g < 200; ++g) {
    ASSERT_EQ(loader.position_at(g), walked) << "global step " << g;
    steps_seen.insert(loader.steps_in_epoch(walked.epoch));
    walked = loader.next(walked);
  }
  EXPECT_GE(walked.epoch, 3);
  // Epoch lengths by the plans: the walk rolled over at each epoch's last step.
  int64_t g = 0;
  for (int64_t e = 0; e < walked.epoch; ++e) g += loader.steps_in_epoch(e);
  EXPECT_EQ(loader.position_at(g), (DataPosition{walked.epoch, 0}));
  EXPECT_FALSE(steps_seen.empty());
}

TEST_F(DocumentLoaderTest, BadOptionsAndPositionsAreNamedErrors) {
  const std::string glob = write_corpus(tc::random_lengths(40, 2, 30, 6));
  const auto make_error = [&](DocumentLoaderOptions o) {
    return hybrid::test::error_of([&] { DocumentLoader(TokenDataset::open(glob), o); }, "(none)");
  };
  EXPECT_THAT(make_error(shape(0, 16)), HasSubstr("micro_batch (0)"));
  EXPECT_THAT(make_error(shape(2, 16, 1, 2, 2)), HasSubstr("rank 2 outside 0..1"));
  DocumentLoaderOptions bad = shape(2, 16);
  bad.dynamic = {33, 1, 0};
  EXPECT_THAT(make_error(bad),
              AllOf(HasSubstr("hybrid.data.dynamic_batching.max_tokens"), HasSubstr("got 33")));
  EXPECT_THAT(make_error(shape(2, 16, 64)),
              AllOf(HasSubstr(glob + ": epoch 0 packs 40 documents"),
                    HasSubstr("fewer than one step of grad_accum × world_size = 64 × 1")));

  DocumentLoader loader(TokenDataset::open(glob), shape(2, 16, 2));
  const int64_t steps = loader.steps_in_epoch(0);
  const auto position_error = [&](DataPosition p) {
    return hybrid::test::error_of<std::out_of_range>([&] { loader.check_position(p); }, "(none)");
  };
  EXPECT_EQ(position_error({0, steps - 1}), "(none)");
  EXPECT_THAT(position_error({0, steps}),
              AllOf(HasSubstr("data position (epoch 0, step " + std::to_string(steps) + ")"),
                    HasSubstr("epoch 0 has " + std::to_string(steps) + " steps")));
  EXPECT_THAT(position_error({-1, 0}), HasSubstr("data position (epoch -1, step 0)"));
  EXPECT_THAT(position_error({2, -3}), HasSubstr("data position (epoch 2, step -3)"));
  std::vector<int32_t> buf(2 * 16);
  const std::vector<MicroBatchArrays> one = {{buf.data(), buf.data(), buf.data()}};
  EXPECT_THAT(hybrid::test::error_of<std::invalid_argument>([&] {
                loader.fill({0, 0}, one);
              }),
              HasSubstr("1 micro-batch arrays for 2 micro-steps"));
  EXPECT_THROW(loader.position_at(-1), std::out_of_range);
}

TEST_F(DocumentLoaderTest, AnExplicitSeparatorOverridesTheFirstToken) {
  DocumentLoaderOptions o = shape(2, 16);
  o.separator = 1 + 64 * 3 + 1;  // the second token of document 3: one split there
  DocumentLoader loader(TokenDataset::open(write_corpus(std::vector<int>(10, 8))), o);
  EXPECT_EQ(loader.separator(), uint32_t(1 + 64 * 3 + 1));
  EXPECT_EQ(loader.documents().starts(), (std::vector<int64_t>{0, 25}));
}

}  // namespace
