// The data layer's "run → tables" functions over the sample profile: the module
// rollup (containers as the sum of their children, unknown modules as roots,
// subtree params), collectives by (op, size), communication per step, and the
// step accounting of waits from events.
#include <gtest/gtest.h>

#include "profiler/tables/collective_groups.h"
#include "profiler/tables/module_rollup.h"
#include "profiler/tables/step_accounting.h"
#include "tests/profiler/sample_profile.h"

namespace hybrid::profiler {
namespace {

constexpr auto kFwdNs = [](const ModuleCost& c) { return c.fwd_ns; };

TEST(ModuleRollup, ContainersCostWhatTheirChildrenDo) {
  const RunProfile p = test::sample_profile();
  const ModuleRollup r = rollup_modules(p, 3);
  EXPECT_EQ(r.ranks, (std::vector<int>{0, 1}));
  ASSERT_EQ(r.tree.roots.size(), 1u);
  const size_t model = r.tree.roots[0], h0 = r.tree.find(2);
  EXPECT_EQ(r.tree.modules[model].name, "model");
  EXPECT_EQ(r.tree.parent(h0), model);
  EXPECT_EQ(r.tree.preorder.front(), model);
  EXPECT_DOUBLE_EQ(r.cost[0][h0].fwd_ns, 10e6);       // attn 4 + mlp 6 ms
  EXPECT_DOUBLE_EQ(r.cost[0][model].fwd_ns, 21.5e6);  // the whole model, rank 0
  EXPECT_DOUBLE_EQ(r.cost[1][model].bwd_ns, 2 * 21.5e6 * 1.25);
  EXPECT_DOUBLE_EQ(r.cost[0][model].fwd_flops, 24.001e9);
  EXPECT_EQ(r.cost[0][h0].calls, 0);  // no row of its own
  EXPECT_EQ(r.cost[0][r.tree.find(3)].calls, 2);
  EXPECT_EQ(r.model_per_rank(kFwdNs), r.per_rank(model, kFwdNs));
  EXPECT_EQ(r.tree.params[model], 623872u);
  EXPECT_EQ(r.tree.params[h0], 16640u + 33088u);
}

TEST(ModuleRollup, UnknownModulesAreRootsAndRanksCanBeChosen) {
  RunProfile p = test::sample_profile();
  p.layers.push_back({0, 42, 3, 1'000'000, 0, 0, 0, 0, 0, 1});
  const ModuleRollup r = rollup_modules(p, 3, std::vector<int>{1});
  EXPECT_EQ(r.ranks, (std::vector<int>{1}));
  ASSERT_EQ(r.cost.size(), 1u);
  const size_t unknown = r.tree.find(42);
  ASSERT_NE(unknown, ModuleTree::npos);
  EXPECT_EQ(r.tree.modules[unknown].name, "#42");
  EXPECT_EQ(r.tree.parent(unknown), ModuleTree::npos);
  EXPECT_EQ(r.tree.roots.size(), 2u);
  // Step 2 has stats of rank 0 only.
  EXPECT_EQ(ranks_in_step(p, 2), (std::vector<int>{0}));
}

TEST(ModuleRollup, SelfParentIsARootAndCyclesAreLeftOut) {
  RunProfile p;
  p.modules = {{0, 0, "self", "A", 0, 1, 0}, {1, 2, "x", "B", 1, 1, 0}, {2, 1, "y", "B", 1, 1, 0}};
  const ModuleTree t = build_module_tree(p, 0);
  EXPECT_EQ(t.roots, (std::vector<size_t>{0}));
  EXPECT_EQ(t.preorder, (std::vector<size_t>{0}));
}

TEST(CollectiveGroups, GroupsByOpAndSizeOverRanks) {
  RunProfile p = test::sample_profile();
  p.comm.push_back({0, "all_gather", 4096, 4, 400'000, 90'000, 110'000, 1.0, 1.0});
  const auto groups = group_collectives(p);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].op, "all_gather");  // by op, then size
  const CollectiveGroup& ar = groups[1];
  EXPECT_EQ(ar.bytes, 1u << 20);
  EXPECT_EQ(ar.ranks, 2);
  EXPECT_EQ(ar.count, 20);
  EXPECT_EQ(ar.total_ns, 12'000'000);
  EXPECT_EQ(ar.min_ns, 400'000);
  EXPECT_EQ(ar.max_ns, 900'000);
  EXPECT_EQ(ar.latency_ms, (std::vector<double>{0.5, 0.7}));
  EXPECT_DOUBLE_EQ(ar.algbw_mean, 1.75);
  EXPECT_DOUBLE_EQ(ar.algbw_min, 1.5);
  EXPECT_DOUBLE_EQ(ar.busbw_mean, 2.75);
  EXPECT_DOUBLE_EQ(ar.busbw_min, 2.5);
}

// A pipeline's sends: stage 0 → 1 on one host, stage 1 → 2 across hosts, same
// size: one row per link class, so the slow link shows apart.
TEST(CollectiveGroups, PointToPointRowsSplitByThePairsLink) {
  RunProfile p;
  p.comm.push_back({0, "send", 1 << 20, 8, 800'000, 90'000, 110'000, 10.0, 10.0, "intra_host"});
  p.comm.push_back({1, "send", 1 << 20, 8, 8'000'000, 900'000, 1'100'000, 1.0, 1.0, "inter_host"});
  p.comm.push_back({1, "recv", 1 << 20, 8, 810'000, 91'000, 111'000, 9.9, 9.9, "intra_host"});
  const auto groups = group_collectives(p);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].op, "recv");
  EXPECT_EQ(groups[1].op, "send");
  EXPECT_EQ(groups[1].link, "intra_host");
  EXPECT_EQ(groups[1].ranks, 1);
  EXPECT_EQ(groups[2].link, "inter_host");
  EXPECT_DOUBLE_EQ(groups[2].busbw_mean, groups[2].algbw_mean);
  const auto links = link_totals(groups);
  ASSERT_EQ(links.size(), 2u);
  EXPECT_DOUBLE_EQ(links[1].bytes, 8.0 * double(1 << 20));  // the inter-host sends only
}

TEST(CollectiveGroups, CommPerStep) {
  const CommSteps s = comm_per_step(test::sample_profile());
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].step, 3);
  EXPECT_EQ(s.steps[0].ranks, 2);
  EXPECT_DOUBLE_EQ(s.steps[0].comm_ms.mean, 21);
  EXPECT_DOUBLE_EQ(s.steps[0].exposed_ms.max, 7);
  EXPECT_DOUBLE_EQ(s.steps[0].hidden_fraction(), 1 - 12.0 / 42.0);
  EXPECT_DOUBLE_EQ(s.comm_ms, 21);
  EXPECT_DOUBLE_EQ(s.exposed_ms, 6);
  EXPECT_TRUE(comm_per_step(RunProfile{}).steps.empty());
}

}  // namespace
}  // namespace hybrid::profiler

namespace hybrid::profiler {
namespace {

Event ev(Category c, uint16_t lane, double start_ms, double dur_ms, int32_t module = -1) {
  Event e;
  e.start_ns = int64_t(start_ms * 1e6);
  e.dur_ns = int64_t(dur_ms * 1e6);
  e.step = 1;
  e.module_id = module;
  e.lane = lane;
  e.category = c;
  return e;
}

// One rank's step: waits inside a module's forward, inside the optimizer and
// outside both, split by whether a collective of the rank was in flight.
TEST(StepAccounting, BooksWaitsToTheInnermostScope) {
  EventSet set;
  set.events = {ev(Category::step, kLaneCompute, 0, 100),
                ev(Category::forward, kLaneCompute, 0, 40, 5),
                ev(Category::comm, kLaneCompute, 10, 10),  // wait: collective from 15 ms
                ev(Category::comm, kLaneComm, 15, 15),     // collective
                ev(Category::optimizer, kLaneCompute, 50, 20),
                ev(Category::comm, kLaneCompute, 55, 5),  // wait: collective until 58 ms
                ev(Category::comm, kLaneComm, 52, 6),
                ev(Category::comm, kLaneCompute, 80, 10)};  // wait outside, nothing in flight
  const auto accounts = account_step(set, 1);
  ASSERT_EQ(accounts.size(), 1u);
  const RankStepAccount& a = accounts[0];
  EXPECT_DOUBLE_EQ(*a.step_event_ms, 100);
  EXPECT_DOUBLE_EQ(a.optimizer_ms, 20);
  EXPECT_DOUBLE_EQ(a.module_waits.at(5).fwd.exposed_ms, 5);
  EXPECT_DOUBLE_EQ(a.module_waits.at(5).fwd.blocked_ms, 5);
  EXPECT_DOUBLE_EQ(a.optimizer_waits.exposed_ms, 3);
  EXPECT_DOUBLE_EQ(a.optimizer_waits.blocked_ms, 2);
  EXPECT_DOUBLE_EQ(a.outside_waits.blocked_ms, 10);
  EXPECT_DOUBLE_EQ(a.all_waits.total_ms(), 25);
  EXPECT_TRUE(account_step(set, 2).empty());
}

}  // namespace
}  // namespace hybrid::profiler
