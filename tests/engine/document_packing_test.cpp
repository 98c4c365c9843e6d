// The pieces of the document loader: document boundaries in a token stream,
// units, the epoch's shuffled order, packing into B × T with padding, dynamic
// batching's limits and learning-rate scaling, and the saved data position.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/json_read.h"
#include "engine/data/data_file_error.h"
#include "engine/data/data_position.h"
#include "engine/data/document_index.h"
#include "engine/data/document_order.h"
#include "engine/data/document_units.h"
#include "engine/data/dynamic_batching.h"
#include "engine/data/epoch_plan.h"
#include "engine/data/packing.h"
#include "engine/data/token_dataset.h"
#include "engine/data/token_shard.h"
#include "tests/common/error_of.h"
#include "tests/common/temp_dir.h"
#include "tests/engine/document_corpus.h"

namespace {

namespace fs = std::filesystem;
using namespace hybrid::engine;
using ::testing::AllOf;
using ::testing::HasSubstr;

class DocumentPackingTest : public ::testing::Test {
 protected:
  hybrid::test::TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
};

std::vector<int64_t> naive_starts(const TokenDataset& d, uint32_t sep) {
  std::vector<int64_t> starts = {0};
  for (int64_t i = 1; i < d.size(); ++i)
    if (d.at(i) == sep) starts.push_back(i);
  return starts;
}

template <class F>
std::string invalid_argument_text(F&& f) {
  return hybrid::test::error_of<std::invalid_argument>(f, "(no std::invalid_argument)");
}

// ---- documents ---------------------------------------------------------------

TEST_F(DocumentPackingTest, DocumentsStartAtSeparatorsAcrossShardsOfBothWidths) {
  // Two leading tokens without a separator (document 0), an empty document
  // (two separators in a row), a document cut by the shard boundary.
  write_token_shard((dir_ / "a_0.bin").string(), std::vector<uint16_t>{5, 6, 0, 1, 2, 0, 0, 3});
  write_token_shard((dir_ / "a_1.bin").string(), std::vector<uint32_t>{4, 0, 70000});
  const TokenDataset d = TokenDataset::open((dir_ / "a_*.bin").string());
  const DocumentIndex index(d, 0);
  EXPECT_EQ(index.starts(), (std::vector<int64_t>{0, 2, 5, 6, 9}));
  EXPECT_EQ(index.count(), 5);
  EXPECT_EQ(index.length(0), 2);
  EXPECT_EQ(index.length(3), 3);  // 0 3 | 4: across the shards
  EXPECT_EQ(index.end(4), 11);
  EXPECT_EQ(index.stream_size(), 11);
  // The default separator is the stream's first token.
  EXPECT_EQ(choose_separator(d), 5u);
  EXPECT_EQ(choose_separator(d, 0u), 0u);
  EXPECT_EQ(DocumentIndex(d, 5).starts(), (std::vector<int64_t>{0}));
  EXPECT_EQ(DocumentIndex(d, 70000).starts(), (std::vector<int64_t>{0, 10}));
}

TEST_F(DocumentPackingTest, IndexEqualsANaiveScanOfAStreamOfManyChunks) {
  // 300k tokens: several of the index's 64 Ki chunks, two shards.
  std::mt19937 gen(7);
  std::vector<uint16_t> tokens(300000);
  for (auto& t : tokens) t = uint16_t(gen() % 50);  // separator 3: about one in 50
  for (size_t at : {65535u, 65536u, 131072u, 299999u}) tokens[at] = 3;  // chunk edges, the end
  const TokenDataset d = TokenDataset::open(test_corpus::write_two_shards(dir_, tokens));
  const DocumentIndex index(d, 3);
  EXPECT_EQ(index.starts(), naive_starts(d, 3));
  EXPECT_GT(index.count(), 5000);
}

TEST_F(DocumentPackingTest, AnEmptyStreamHasNoDocuments) {
  const TokenDataset empty = TokenDataset::from_tokens({}, "nothing");
  EXPECT_THROW(DocumentIndex(empty, 0), DataFileError);
  try {
    choose_separator(empty);
    ADD_FAILURE() << "no error";
  } catch (const DataFileError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nothing: an empty token stream"));
  }
}

// ---- units -------------------------------------------------------------------

TEST_F(DocumentPackingTest, LongDocumentsAreCutIntoPiecesOfAtMostT) {
  const auto tokens = test_corpus::corpus_tokens({3, 10, 4});
  const TokenDataset d = TokenDataset::from_tokens(tokens);
  const DocumentIndex index(d, 0);
  std::vector<DocumentUnit> units;
  for (int64_t doc = 0; doc < index.count(); ++doc) append_units(index, doc, 4, units);
  ASSERT_EQ(units.size(), 5u);
  const std::vector<std::array<int64_t, 3>> expected = {
      {0, 0, 3}, {3, 1, 4}, {7, 1, 4}, {11, 1, 2}, {13, 2, 4}};
  for (size_t u = 0; u < units.size(); ++u) {
    EXPECT_EQ(units[u].start, expected[u][0]) << u;
    EXPECT_EQ(units[u].document, expected[u][1]) << u;
    EXPECT_EQ(units[u].length, expected[u][2]) << u;
  }
  EXPECT_EQ(unit_count(10, 4), 3);
  EXPECT_EQ(unit_count(8, 4), 2);
  EXPECT_EQ(unit_count(1, 4), 1);
  // Targets: the next tokens, the next document's separator after a document's
  // last token, the stream's first token after its end.
  std::vector<int32_t> in(4), tg(4);
  copy_unit(d, units[3], in.data(), tg.data());
  EXPECT_EQ(std::vector<int32_t>(in.begin(), in.begin() + 2),
            (std::vector<int32_t>{test_corpus::doc_token(1, 8), test_corpus::doc_token(1, 9)}));
  EXPECT_EQ(std::vector<int32_t>(tg.begin(), tg.begin() + 2),
            (std::vector<int32_t>{test_corpus::doc_token(1, 9), 0}));
  copy_unit(d, units[4], in.data(), tg.data());
  EXPECT_EQ(tg, (std::vector<int32_t>{test_corpus::doc_token(2, 1), test_corpus::doc_token(2, 2),
                                      test_corpus::doc_token(2, 3), int32_t(tokens[0])}));
}

// ---- order -------------------------------------------------------------------

TEST_F(DocumentPackingTest, SplitMix64GivesThePublishedOutputs) {
  // Seed 1234567: the reference outputs of Vigna's splitmix64.c (as Rosetta
  // Code's "Pseudo-random numbers/Splitmix64" lists them).
  uint64_t state = 1234567;
  for (uint64_t want : {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull,
                        4593380528125082431ull, 16408922859458223821ull})
    EXPECT_EQ(splitmix64_next(state), want);
  // The epoch's state is splitmix64(splitmix64(seed) + epoch), as documented.
  uint64_t s = 1234567;
  uint64_t keyed = splitmix64_next(s) + 3;
  EXPECT_EQ(epoch_shuffle_state(1234567, 3), splitmix64_next(keyed));
}

TEST_F(DocumentPackingTest, ShuffledOrderIsAPermutationPerSeedAndEpoch) {
  const auto a = document_order(1000, 42, 0, true);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
  EXPECT_EQ(a, document_order(1000, 42, 0, true));  // deterministic
  EXPECT_NE(a, document_order(1000, 42, 1, true));  // another epoch
  EXPECT_NE(a, document_order(1000, 43, 0, true));  // another seed
  EXPECT_EQ(document_order(1000, 42, 5, false), identity);
  EXPECT_TRUE(document_order(0, 42, 0, true).empty());
  EXPECT_EQ(document_order(1, 42, 0, true), std::vector<int64_t>{0});
}

TEST_F(DocumentPackingTest, ShuffleDrawsEveryPermutationAboutEquallyOften) {
  // 4 documents, 24,000 epochs: each of the 24 orders about 1,000 times (a
  // biased draw, e.g. j = r mod (i+1) without rejection over a small range, or
  // an off-by-one in Fisher–Yates, leaves some orders out or skews them far more).
  std::map<std::vector<int64_t>, int> seen;
  for (int e = 0; e < 24000; ++e) ++seen[document_order(4, 9, e, true)];
  ASSERT_EQ(seen.size(), 24u);
  for (const auto& [order, n] : seen) EXPECT_NEAR(n, 1000, 150);
}

// ---- packing -----------------------------------------------------------------

struct PackedArrays {
  explicit PackedArrays(int n)
      : inputs(size_t(n), 99), targets(size_t(n), 99), positions(size_t(n), 99) {}
  MicroBatchArrays view() { return {inputs.data(), targets.data(), positions.data()}; }
  std::vector<int32_t> inputs, targets, positions;
};

// Four documents: [0 11 12] [0 21] [0 31 32 33] [0 41].
TokenDataset small_stream() {
  return TokenDataset::from_tokens({0, 11, 12, 0, 21, 0, 31, 32, 33, 0, 41});
}

std::vector<DocumentUnit> units_of(const TokenDataset& d, int T) {
  const DocumentIndex index(d, 0);
  std::vector<DocumentUnit> units;
  for (int64_t doc = 0; doc < index.count(); ++doc) append_units(index, doc, T, units);
  return units;
}

TEST_F(DocumentPackingTest, UnitsFillRowsGreedilyAndTheRestIsPadding) {
  const TokenDataset d = small_stream();
  const auto units = units_of(d, 5);
  const PackingLimits limits{2, 5, 0, 0};
  // Row 0: 3 + 2 tokens (full); row 1: 4 tokens; the fourth unit (2) fits
  // neither the rest of row 1 nor a third row.
  ASSERT_EQ(units_in_micro_batch(units, limits), 3u);
  PackedArrays a(10);
  const BatchCounts c = pack_micro_batch(d, std::span(units).first(3), limits, 0, a.view());
  EXPECT_EQ(a.inputs, (std::vector<int32_t>{0, 11, 12, 0, 21, 0, 31, 32, 33, 0}));
  EXPECT_EQ(a.targets, (std::vector<int32_t>{11, 12, 0, 21, 0, 31, 32, 33, 0, -1}));
  EXPECT_EQ(a.positions, (std::vector<int32_t>{0, 1, 2, 0, 1, 0, 1, 2, 3, 0}));
  EXPECT_EQ(c, (BatchCounts{3, 9, 1}));
  // The last unit alone: its target wraps to the stream's first token; a row
  // with no unit is all padding, positions 0..T-1, inputs the separator given.
  PackedArrays b(10);
  EXPECT_EQ(pack_micro_batch(d, std::span(units).subspan(3), limits, 7, b.view()),
            (BatchCounts{1, 2, 8}));
  EXPECT_EQ(b.inputs, (std::vector<int32_t>{0, 41, 7, 7, 7, 7, 7, 7, 7, 7}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{41, 0, -1, -1, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(b.positions, (std::vector<int32_t>{0, 1, 0, 1, 2, 0, 1, 2, 3, 4}));
}

TEST_F(DocumentPackingTest, TokenBudgetAndUnitLimitCloseTheMicroBatch) {
  const TokenDataset d = small_stream();
  const auto units = units_of(d, 5);                         // 3, 2, 4, 2 tokens
  EXPECT_EQ(units_in_micro_batch(units, {2, 5, 7, 0}), 2u);  // 3 + 2 + 4 > 7
  EXPECT_EQ(units_in_micro_batch(units, {2, 5, 9, 0}), 3u);  // 9 = 9
  EXPECT_EQ(units_in_micro_batch(units, {2, 5, 0, 1}), 1u);
  EXPECT_EQ(units_in_micro_batch(units, {4, 5, 0, 0}), 4u);  // rows to spare
  EXPECT_EQ(units_in_micro_batch(std::span(units).subspan(2), {1, 5, 0, 0}), 1u);
  EXPECT_EQ(units_in_micro_batch({}, {1, 5, 0, 0}), 0u);
  // Packing more than fits is the caller's error.
  PackedArrays a(10);
  EXPECT_THROW(pack_micro_batch(d, units, {2, 5, 0, 0}, 0, a.view()), std::logic_error);
  EXPECT_THROW(pack_micro_batch(d, std::span(units).first(2), {2, 5, 4, 0}, 0, a.view()),
               std::logic_error);
  // A unit longer than T is refused, naming it.
  EXPECT_THAT(
      invalid_argument_text([&] {
        units_in_micro_batch(units, {2, 3, 0, 0});
      }),
      HasSubstr("a unit of 4 tokens at stream position 5 (document 2) is outside 1..seq_len = 3"));
}

TEST_F(DocumentPackingTest, EpochPlanPacksInOrderAndDropsAShortLastMicroBatch) {
  // Five documents of 4 tokens, 2 rows of 4: two units per micro-batch.
  const TokenDataset d = TokenDataset::from_tokens(test_corpus::corpus_tokens({4, 4, 4, 4, 4}));
  const DocumentIndex index(d, 0);
  const std::vector<int64_t> order = {3, 1, 4, 0, 2};
  const EpochPlan rows_fill = plan_epoch(index, order, {2, 4, 0, 0}, 1, 7);
  EXPECT_EQ(rows_fill.epoch, 7);
  EXPECT_EQ(rows_fill.batch_begin, (std::vector<int64_t>{0, 2, 4, 5}));
  EXPECT_EQ(rows_fill.batch_real_tokens, (std::vector<int64_t>{8, 8, 4}));
  ASSERT_EQ(rows_fill.units.size(), 5u);
  for (size_t u = 0; u < 5; ++u) EXPECT_EQ(rows_fill.units[u].document, order[u]);
  EXPECT_EQ(rows_fill.micro_batch(1)[0].start, 16);  // document 4
  // With min_batch 2 the last micro-batch (one unit) is not read.
  const EpochPlan dynamic = plan_epoch(index, order, {2, 4, 8, 0}, 2, 0);
  EXPECT_EQ(dynamic.batch_begin, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(dynamic.micro_batches(), 2);
  EXPECT_EQ(dynamic.sequences(1), 2);
}

// ---- dynamic batching --------------------------------------------------------

TEST_F(DocumentPackingTest, DynamicBatchingOptionsAreCheckedByName) {
  const auto error = [](DynamicBatchOptions o) {
    return invalid_argument_text([&] { validate_dynamic_batching(o, 4, 16); });
  };
  const std::string key = "hybrid.data.dynamic_batching.";
  EXPECT_THAT(error({64, 0, 0}),
              AllOf(HasSubstr(key + "min_batch must be >= 1"), HasSubstr("got 0")));
  EXPECT_THAT(error({64, 3, 2}),
              AllOf(HasSubstr(key + "min_batch must be <= max_batch (2)"), HasSubstr("got 3")));
  EXPECT_THAT(error({64, 5, 0}),
              AllOf(HasSubstr(key + "min_batch must be <= the micro-batch's rows (4)"),
                    HasSubstr("got 5")));
  EXPECT_THAT(error({31, 2, 0}), AllOf(HasSubstr(key + "max_tokens must be in"),
                                       HasSubstr("= [32, 64]"), HasSubstr("got 31")));
  EXPECT_THAT(error({65, 1, 0}), AllOf(HasSubstr(key + "max_tokens"), HasSubstr("got 65")));
  EXPECT_THAT(error({-5, 1, 0}), HasSubstr(key + "max_tokens must be 0 (off) or positive, got -5"));
  EXPECT_THAT(error({64, 1, -1}),
              HasSubstr(key + "max_batch must be 0 (no limit) or positive, got -1"));
  EXPECT_NO_THROW(validate_dynamic_batching({32, 2, 2}, 4, 16));
  EXPECT_NO_THROW(validate_dynamic_batching({64, 4, 0}, 4, 16));
  EXPECT_NO_THROW(validate_dynamic_batching({0, 0, -3}, 4, 16));  // off: not used
  const PackingLimits off = packing_limits({0, 3, 3}, 4, 16);
  EXPECT_EQ(off.max_tokens, 0);
  EXPECT_EQ(off.max_units, 0);
  const PackingLimits on = packing_limits({40, 2, 3}, 4, 16);
  EXPECT_EQ(on.max_tokens, 40);
  EXPECT_EQ(on.max_units, 3);
}

TEST_F(DocumentPackingTest, LearningRateScaleFollowsTheMethod) {
  // DeepSpeed's scale_lr with base_lr = 1.
  EXPECT_EQ(lr_scale("none", 48, 32), 1.0);
  EXPECT_EQ(lr_scale("linear", 48, 32), 1.5);
  EXPECT_EQ(lr_scale("linear", 8, 32), 0.25);
  EXPECT_NEAR(lr_scale("sqrt", 48, 32), 1.2247448713915890491, 1e-15);
  EXPECT_EQ(lr_scale("sqrt", 8, 32), 0.5);
  EXPECT_EQ(lr_scale("linear", 0, 32), 0.0);
  EXPECT_THAT(
      invalid_argument_text([] { lr_scale("cubic", 4, 4); }),
      HasSubstr(
          "hybrid.data.dynamic_batching.lr_scaling must be none, linear or sqrt, got \"cubic\""));
  EXPECT_THAT(invalid_argument_text([] { lr_scale("linear", 4, 0); }),
              HasSubstr("base batch size 0"));
}

// ---- data position -----------------------------------------------------------

TEST_F(DocumentPackingTest, DataPositionRollsOverAndRoundTripsThroughJson) {
  EXPECT_EQ((DataPosition{2, 3}.next(5)), (DataPosition{2, 4}));
  EXPECT_EQ((DataPosition{2, 4}.next(5)), (DataPosition{3, 0}));
  const nlohmann::json j = DataPosition{7, 11};
  EXPECT_EQ(j, nlohmann::json::parse(R"({"epoch": 7, "step": 11})"));
  EXPECT_EQ(j.get<DataPosition>(), (DataPosition{7, 11}));
  const auto error = [](const char* text) {
    try {
      nlohmann::json::parse(text).get<DataPosition>();
    } catch (const hybrid::base::JsonReadError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(error(R"({"epoch": 1})"), HasSubstr("data_position: step must be present"));
  EXPECT_THAT(error(R"({"epoch": -1, "step": 0})"), HasSubstr("data_position: epoch must be"));
  EXPECT_THAT(error(R"({"epoch": 1, "step": "3"})"), HasSubstr("data_position: step must be"));
  EXPECT_THAT(error(R"([1, 2])"), HasSubstr("data_position: data_position must be an object"));
}

}  // namespace
