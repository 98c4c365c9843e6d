// The rows a rank on another machine hands to rank 0: every field survives the
// encoding, a damaged or cut buffer is refused with a message saying where, and
// RunStore::add_rank_rows stores them as the rank would have (its host and pid),
// all or nothing.
#include "profiler/rank_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "profiler/store/run_store.h"
#include "store_test_util.h"
#include "tests/profiler/full_rows.h"

namespace hybrid::profiler {
namespace {

// Every field set, none at its default, several beyond 32 bits.
RankRows sample_rows() {
  RankRows r;
  r.rank = {3, "node-b", 4242, 1'700'000'000'123'456'789, 1, 2, 8, 64ull << 30};
  r.step_ranks = {{1, 3, 10.5, 2.25, 0.75}, {2, 3, 11.0, 2.5, 0.5}, {2, 3, 9.0, 3.0, 1.0}};
  r.step_timers = {{1, 3, "forward", 4.5}, {1, 3, "optimizer_step", 1.25}};
  r.layers = {test::full_layer_stat(3, 7, 2)};
  r.gpu = {test::full_gpu_timeline(3)};
  const Event a = test::full_event(3, 7, 2, 1);
  Event b = a;
  b.name_id = 0, b.module_id = -1, b.step = -1, b.category = Category::recompute;
  r.events = {{a, b}, {"step", "all_reduce"}};
  r.comm = {{3, "all_reduce", 4096, 12, 9000, 500, 1200, 1.5, 2.75, "inter_host"}};
  r.memory = {{3, "params", 1000, 2000, 3000}, {3, "activations", 10, 20, std::nullopt}};
  return r;
}

void expect_same_events(const EventSet& got, const EventSet& want) {
  EXPECT_EQ(got.names, want.names);
  ASSERT_EQ(got.events.size(), want.events.size());
  for (size_t i = 0; i < want.events.size(); ++i) {
    test::expect_event_fields(got.events[i], want.events[i], i);
    EXPECT_EQ(got.events[i].name_id, want.events[i].name_id) << i;  // the same name table
  }
}

void expect_same_rows(const RankRows& got, const RankRows& want) {
  EXPECT_EQ(got.rank, want.rank);
  EXPECT_EQ(got.step_ranks, want.step_ranks);
  EXPECT_EQ(got.step_timers, want.step_timers);
  EXPECT_EQ(got.layers, want.layers);
  EXPECT_EQ(got.gpu, want.gpu);
  expect_same_events(got.events, want.events);
  EXPECT_EQ(got.comm, want.comm);
  EXPECT_EQ(got.memory, want.memory);
}

TEST(RankRows, EveryFieldSurvivesTheEncoding) {
  const RankRows rows = sample_rows();
  expect_same_rows(decode_rank_rows(encode_rank_rows(rows)), rows);
}

TEST(RankRows, NothingToSayIsStillAValidBuffer) {
  RankRows empty;
  empty.rank.rank = 5;
  const auto back = decode_rank_rows(encode_rank_rows(empty));
  EXPECT_EQ(back.rank.rank, 5);
  EXPECT_TRUE(back.step_ranks.empty() && back.events.events.empty() && back.memory.empty());
}

TEST(RankRows, NaNAndInfinityPassBitForBit) {
  RankRows rows;
  rows.step_ranks = {{1, 0, std::numeric_limits<double>::quiet_NaN(),
                      std::numeric_limits<double>::infinity(), -0.0}};
  const auto back = decode_rank_rows(encode_rank_rows(rows));
  ASSERT_EQ(back.step_ranks.size(), 1u);
  EXPECT_TRUE(std::isnan(back.step_ranks[0].compute_ms));
  EXPECT_TRUE(std::isinf(back.step_ranks[0].comm_ms));
  EXPECT_TRUE(std::signbit(back.step_ranks[0].exposed_comm_ms));
}

TEST(RankRows, EveryCutBufferIsRefusedNamingThePart) {
  const std::string bytes = encode_rank_rows(sample_rows());
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      (void)decode_rank_rows(std::string_view(bytes).substr(0, n));
      ADD_FAILURE() << "a buffer cut to " << n << " of " << bytes.size() << " bytes was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("rank rows: ", 0), 0u) << e.what();
    }
  }
}

TEST(RankRows, DamagedHeaderLengthOrTailIsRefused) {
  const std::string good = encode_rank_rows(sample_rows());
  auto refused = [](const std::string& bytes, const std::string& says) {
    try {
      (void)decode_rank_rows(bytes);
      ADD_FAILURE() << "accepted; wanted an error saying '" << says << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  std::string magic = good;
  magic[0] ^= 0x7f;
  refused(magic, "bad magic");
  std::string version = good;
  version[4] = 9;
  refused(version, "version 9");
  refused(good + "x", "1 bytes left over");
  // The step_ranks count follows the header (8 bytes) and the rank (4 + 8 + 6
  // for "node-b" + 8 + 8 + 3 * 4 + 8): its top byte made huge.
  std::string count = good;
  count[8 + 4 + 8 + 6 + 8 + 8 + 12 + 8 + 7] = char(0x40);
  refused(count, "step_ranks claims");
  RankRows one_event;
  one_event.events.events.resize(1);
  one_event.events.names = {"x"};
  std::string category = encode_rank_rows(one_event);
  // After the event's category and scope bytes: the names (8 + 8 + 1), comm and
  // memory counts (8 + 8).
  category[category.size() - 33 - 2] = char(200);
  refused(category, "category 200");
}

TEST(RankRows, TheStoreKeepsTheSendersHostAndPid) {
  test::TempDir dir;
  RunStore store(dir / "runs.db");
  RunInfo info;
  info.name = "forwarded";
  const int64_t id = store.create_run(info);
  const RankRows rows = sample_rows();
  store.add_rank_rows(id, rows);

  const auto ranks = store.ranks(id);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0], rows.rank);  // node-b, pid 4242: not this process
  // The later row of step 2 replaced the earlier one, as in a rank's own writes.
  const auto steps = store.step_ranks(id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1], rows.step_ranks[2]);
  EXPECT_EQ(store.step_timers(id).size(), rows.step_timers.size());
  EXPECT_EQ(store.layer_stats(id), rows.layers);
  EXPECT_EQ(store.comm_stats(id), rows.comm);
  EXPECT_EQ(store.memory(id).size(), rows.memory.size());
  EXPECT_EQ(store.gpu_timeline(id).size(), 1u);
  const auto events = store.events(id);
  ASSERT_EQ(events.events.size(), 2u);
  std::set<std::string> names;
  for (const auto& e : events.events) names.insert(events.names[e.name_id]);
  EXPECT_EQ(names, (std::set<std::string>{"step", "all_reduce"}));
  EXPECT_EQ(store.integrity_check(), "ok");
}

TEST(RankRows, BadEventNamesStoreNothing) {
  test::TempDir dir;
  RunStore store(dir / "runs.db");
  const int64_t id = store.create_run(RunInfo{});
  RankRows rows = sample_rows();
  rows.events.events[0].name_id = 9;  // two names given
  EXPECT_THROW(store.add_rank_rows(id, rows), std::invalid_argument);
  EXPECT_TRUE(store.ranks(id).empty());
  EXPECT_TRUE(store.step_ranks(id).empty());
  EXPECT_EQ(store.event_count(id), 0);
}

}  // namespace
}  // namespace hybrid::profiler
