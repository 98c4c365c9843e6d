// The layer breakdown read back from a real run store: per-module times against
// the books the fixture kept while it laid out the events, shares of the step
// summing to 100 %, the rows that complete the step (optimizer, exposed comm,
// other) against independent formulas, and the sort orders of the tree.
#include "gui/model/layer_breakdown.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "gui/model/database.h"
#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

using test::FixtureRun;
using test::FixtureRunSpec;
using test::FixtureWriter;
using test::TempDir;

constexpr double kMsTol = 1e-6;      // ms; the store keeps ns integers, sums are exact to rounding
constexpr double kShareTol = 1e-12;  // shares of the top-level rows sum to 1 up to float rounding

struct RunFixture {
  TempDir dir;
  FixtureRun run;
  RunData data;
  explicit RunFixture(const FixtureRunSpec& spec = {}) {
    const auto path = dir / "hybrid.db";
    {
      profiler::RunStore store(path);
      run = FixtureWriter(store).write_run(spec);
    }
    Database db(path);
    EXPECT_TRUE(db.is_open()) << db.error();
    data = *db.load_run(run.run_id);
  }
  double mean_over_ranks(int64_t step, auto field) const {
    const auto& ranks = run.expect.at(step);
    double sum = 0;
    for (const auto& r : ranks) sum += field(r);
    return sum / double(ranks.size());
  }
};

double top_share_sum(const LayerBreakdown& b) {
  double s = 0;
  for (int i : b.top_rows) s += b.rows[size_t(i)].share;
  return s;
}

TEST(LayerBreakdown, RowsMatchTheModuleTreeAndTheEventBooks) {
  RunFixture f;
  const LayerBreakdown b = build_layer_breakdown(f.data.profile, f.data.events);
  EXPECT_EQ(b.step, 9);  // the last profiled step by default
  EXPECT_EQ(b.profiled_steps, (std::vector<int64_t>{5, 9}));
  EXPECT_EQ(b.ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(b.has_events);
  EXPECT_TRUE(b.step_measured);
  ASSERT_EQ(b.rows.size(), f.run.modules.size() + 3);  // + optimizer, exposed comm, other
  // Preorder, like the engine's module table: row i is module i.
  for (size_t i = 0; i < f.run.modules.size(); ++i) {
    const LayerRow& r = b.rows[i];
    ASSERT_EQ(r.kind, LayerRowKind::module);
    EXPECT_EQ(r.module_id, int32_t(i));
    EXPECT_EQ(r.name, f.run.modules[i].name.empty() ? "model" : f.run.modules[i].name);
    EXPECT_EQ(r.depth, f.run.modules[i].depth);
    const auto id = int32_t(i);
    EXPECT_NEAR(r.fwd_ms.mean, f.mean_over_ranks(9, [&](auto& e) { return e.fwd_ms.at(id); }),
                kMsTol)
        << r.name;
    EXPECT_NEAR(r.bwd_ms.mean, f.mean_over_ranks(9, [&](auto& e) { return e.bwd_ms.at(id); }),
                kMsTol)
        << r.name;
    // Rank 1 runs 1.1× slower: it is the max, rank 0 the min.
    const auto& ex = f.run.expect.at(9);
    EXPECT_NEAR(r.total_ms.min, ex[0].fwd_ms.at(id) + ex[0].bwd_ms.at(id), kMsTol);
    EXPECT_NEAR(r.total_ms.max, ex[1].fwd_ms.at(id) + ex[1].bwd_ms.at(id), kMsTol);
    EXPECT_NEAR(r.exposed_ms.mean,
                f.mean_over_ranks(9,
                                  [&](auto& e) {
                                    auto it = e.exposed_ms.find(id);
                                    return it == e.exposed_ms.end() ? 0.0 : it->second;
                                  }),
                kMsTol)
        << r.name;
    // The stacked bar adds up to the row's time.
    EXPECT_NEAR(r.bar.forward + r.bar.backward + r.bar.exposed + r.bar.other, r.total_ms.mean,
                1e-9);
  }
  // Exposed comm sits in h.0 (the bucket wait) and, inclusively, in the model.
  const LayerRow& h0 = b.rows[size_t(b.find_name("h.0"))];
  EXPECT_GT(h0.exposed_ms.mean, 0.0);
  // Two waits per rank (one per micro-step at ZeRO 2): 2 × 0.6 ms × (1 + 0.1 r), mean over r ∈ {0,
  // 1}.
  EXPECT_NEAR(h0.exposed_ms.mean, 2 * 0.6 * 1.05, 1e-5);
  EXPECT_NEAR(b.rows[0].exposed_ms.mean, h0.exposed_ms.mean, kMsTol);
  EXPECT_EQ(b.rows[size_t(b.find_name("h.1"))].exposed_ms.mean, 0.0);
}

TEST(LayerBreakdown, SharesOfTheTopLevelRowsSumToTheStep) {
  RunFixture f;
  for (int64_t step : {5, 9}) {
    const LayerBreakdown b = build_layer_breakdown(f.data.profile, f.data.events, {step, {}});
    ASSERT_EQ(b.top_rows.size(), 4u);  // model, optimizer, exposed comm, other
    EXPECT_NEAR(top_share_sum(b), 1.0, kShareTol);
    // The step is the measured step event (every part was attributed, nothing overlaps).
    EXPECT_NEAR(b.step_ms.mean, f.mean_over_ranks(step, [](auto& e) { return e.step_ms; }), kMsTol);
    const LayerRow& opt = b.rows[size_t(b.top_rows[1])];
    const LayerRow& out = b.rows[size_t(b.top_rows[2])];
    const LayerRow& other = b.rows[size_t(b.top_rows[3])];
    EXPECT_EQ(opt.kind, LayerRowKind::optimizer);
    EXPECT_EQ(out.kind, LayerRowKind::exposed_comm);
    EXPECT_EQ(other.kind, LayerRowKind::other);
    // Independent formulas: rank r runs (1 + 0.1 r) slower; the mean factor of two ranks is 1.05.
    const FixtureRunSpec spec;
    EXPECT_NEAR(opt.total_ms.mean, (spec.optimizer_ms + spec.wait_in_optimizer_ms) * 1.05, 1e-5);
    EXPECT_NEAR(opt.exposed_ms.mean, spec.wait_in_optimizer_ms * 1.05, 1e-5);
    EXPECT_NEAR(out.total_ms.mean, spec.wait_outside_ms * 1.05, 1e-5);
    // "other" is what no scope claimed: the data loading and the step's tail.
    EXPECT_NEAR(other.total_ms.mean, (spec.data_ms + spec.step_tail_ms) * 1.05, 1e-5);
    // Each share is the row's time over the step.
    for (const LayerRow& r : b.rows) EXPECT_NEAR(r.share, r.total_ms.mean / b.step_ms.mean, 1e-12);
    // A parent's time covers its children's (inclusive values).
    for (const LayerRow& r : b.rows) {
      double children = 0;
      for (int c : r.children) children += b.rows[size_t(c)].total_ms.mean;
      EXPECT_LE(children, r.total_ms.mean + kMsTol) << r.name;
    }
  }
}

TEST(LayerBreakdown, WaitsWithoutACollectiveInFlightAreTheirOwnRow) {
  FixtureRunSpec spec;
  spec.wait_blocked_ms = 0.5;  // after the flush, no collective of the rank in flight
  RunFixture f(spec);
  const LayerBreakdown b = build_layer_breakdown(f.data.profile, f.data.events);
  ASSERT_EQ(b.top_rows.size(), 5u);  // model, optimizer, exposed comm, blocked wait, other
  const LayerRow& out = b.rows[size_t(b.top_rows[2])];
  const LayerRow& blocked = b.rows[size_t(b.top_rows[3])];
  const LayerRow& other = b.rows[size_t(b.top_rows[4])];
  EXPECT_EQ(blocked.kind, LayerRowKind::blocked_comm);
  // Exposed = waits ∩ collectives: the blocked wait does not count there ...
  EXPECT_NEAR(out.total_ms.mean, spec.wait_outside_ms * 1.05, 1e-5);
  // ... but in its own row, and "other" stays what no scope claimed.
  EXPECT_NEAR(blocked.total_ms.mean, spec.wait_blocked_ms * 1.05, 1e-5);
  EXPECT_NEAR(other.total_ms.mean, (spec.data_ms + spec.step_tail_ms) * 1.05, 1e-5);
  EXPECT_NEAR(top_share_sum(b), 1.0, kShareTol);
  EXPECT_NEAR(b.step_ms.mean, f.mean_over_ranks(9, [](auto& e) { return e.step_ms; }), kMsTol);
  // The fixture's step_ranks book exposed time the comm tracer's way: ours agrees.
  double exposed = 0;
  for (int i : b.top_rows) exposed += b.rows[size_t(i)].exposed_ms.mean;
  double booked = 0;
  for (const auto& sr : f.data.profile.step_ranks)
    if (sr.step == 9) booked += sr.exposed_comm_ms / 2;
  EXPECT_NEAR(exposed, booked, 1e-5);
}

TEST(LayerBreakdown, ParamsFlopsAndRatesComeFromTheTree) {
  RunFixture f;
  const LayerBreakdown b = build_layer_breakdown(f.data.profile, f.data.events);
  uint64_t params = 0, activations = 0;
  double leaf_fwd_flops = 0;
  for (const auto& m : f.run.modules) {
    params += m.params;
    activations += m.activation_bytes;
    if (m.children.empty()) leaf_fwd_flops += double(m.fwd_flops);
  }
  const LayerRow& model = b.rows[0];
  EXPECT_EQ(model.params, params);
  EXPECT_EQ(model.params, f.data.profile.run.n_params);
  EXPECT_EQ(model.activation_bytes, activations);
  // Containers have no FLOPs of their own: the model's are its leaves', per micro-step × gas.
  EXPECT_DOUBLE_EQ(model.fwd_flops, leaf_fwd_flops * f.run.spec.grad_accum);
  EXPECT_DOUBLE_EQ(model.bwd_flops, 2 * model.fwd_flops);
  for (const LayerRow& r : b.rows) {
    if (r.kind != LayerRowKind::module || r.total_ms.mean == 0) continue;
    EXPECT_NEAR(r.flops_per_s, (r.fwd_flops + r.bwd_flops) / (r.total_ms.mean * 1e-3),
                1e-9 * r.flops_per_s);
  }
  const LayerRow& attn = b.rows[size_t(b.find_name("h.1.attn.c_attn"))];
  EXPECT_EQ(attn.calls, f.run.spec.grad_accum);
  const auto& m = f.run.modules[size_t(attn.module_id)];
  EXPECT_EQ(attn.params, m.params);
}

TEST(LayerBreakdown, OneRankAndWrongOptionsAreHandled) {
  RunFixture f;
  const LayerBreakdown b = build_layer_breakdown(f.data.profile, f.data.events, {9, 1});
  EXPECT_EQ(b.ranks, std::vector<int>{1});
  const auto& ex = f.run.expect.at(9)[1];
  EXPECT_NEAR(b.rows[0].total_ms.mean, ex.fwd_ms.at(0) + ex.bwd_ms.at(0), kMsTol);
  EXPECT_EQ(b.rows[0].total_ms.min, b.rows[0].total_ms.max);
  EXPECT_NEAR(b.step_ms.mean, ex.step_ms, kMsTol);
  EXPECT_NEAR(top_share_sum(b), 1.0, kShareTol);
  EXPECT_THROW(build_layer_breakdown(f.data.profile, f.data.events, {7, {}}),
               std::invalid_argument);
  EXPECT_THROW(build_layer_breakdown(f.data.profile, f.data.events, {9, 5}), std::invalid_argument);
}

TEST(LayerBreakdown, WithoutEventsTheStepIsModulesPlusOther) {
  RunFixture f;
  profiler::RunProfile p = f.data.profile;
  const LayerBreakdown b = build_layer_breakdown(p, profiler::EventSet{});
  EXPECT_FALSE(b.has_events);
  ASSERT_EQ(b.top_rows.size(), 2u);  // model, other
  const LayerRow& other = b.rows[size_t(b.top_rows[1])];
  // The measured step is the step row (rank 0's wall time) for every rank; a rank
  // whose modules took longer than that (rank 1 is 1.1x slower) has no "other" and
  // its step is its modules' time.
  double step_ms = 0;
  for (const auto& s : p.steps)
    if (s.step == 9) step_ms = s.step_ms;
  double step_sum = 0, other_sum = 0;
  for (const auto& e : f.run.expect.at(9)) {
    const double modules = e.fwd_ms.at(0) + e.bwd_ms.at(0);
    step_sum += std::max(step_ms, modules);
    other_sum += std::max(0.0, step_ms - modules);
  }
  EXPECT_NEAR(b.step_ms.mean, step_sum / 2, kMsTol);
  EXPECT_NEAR(other.total_ms.mean, other_sum / 2, kMsTol);
  EXPECT_NEAR(top_share_sum(b), 1.0, kShareTol);

  // Rank 0 alone: the step is exactly the step row.
  const LayerBreakdown r0 = build_layer_breakdown(p, profiler::EventSet{}, {9, 0});
  EXPECT_NEAR(r0.step_ms.mean, step_ms, kMsTol);
  EXPECT_NEAR(r0.rows[size_t(r0.top_rows[1])].total_ms.mean, step_ms - r0.rows[0].total_ms.mean,
              kMsTol);
  EXPECT_GT(r0.rows[size_t(r0.top_rows[1])].total_ms.mean, 1.0);

  // A step row shorter than what the modules measured: no negative "other"; the
  // step becomes the attributed sum and the shares still add up.
  for (auto& s : p.steps) s.step_ms = 1.0;
  const LayerBreakdown short_step = build_layer_breakdown(p, profiler::EventSet{});
  EXPECT_EQ(short_step.rows[size_t(short_step.top_rows[1])].total_ms.mean, 0.0);
  EXPECT_NEAR(short_step.step_ms.mean, short_step.rows[0].total_ms.mean, kMsTol);
  EXPECT_NEAR(top_share_sum(short_step), 1.0, kShareTol);
}

TEST(LayerBreakdown, ContainersWithoutRowsAreTheSumOfTheirChildren) {
  RunFixture f;
  profiler::RunProfile p = f.data.profile;
  // Drop the rows of the containers (model, blocks, attn, mlp) as a leaf-only writer would.
  std::erase_if(p.layers, [&](const profiler::LayerStat& l) {
    return !f.run.modules[size_t(l.module_id)].children.empty();
  });
  const LayerBreakdown b = build_layer_breakdown(p, profiler::EventSet{});
  for (const LayerRow& r : b.rows) {
    if (r.children.empty()) continue;
    double fwd = 0;
    for (int c : r.children) fwd += b.rows[size_t(c)].fwd_ms.mean;
    EXPECT_NEAR(r.fwd_ms.mean, fwd, kMsTol) << r.name;
  }
}

// Activation checkpointing: block h.0 is recomputed in backward. Its rows (and
// the model's) hold the recomputation apart from backward, as the engine writes
// them: the model's backward scope lost that time to the recompute column.
TEST(LayerBreakdown, RecomputationIsItsOwnPartOfEveryRowAndOfTheStep) {
  RunFixture f;
  profiler::RunProfile p = f.data.profile;
  const LayerBreakdown before = build_layer_breakdown(p, f.data.events);
  std::map<std::pair<int64_t, int>, int64_t> block_rc;  // (step, rank) → h.0's recomputation
  for (auto& l : p.layers) {
    const std::string& name = f.run.modules[size_t(l.module_id)].name;
    if (name.rfind("h.0", 0) != 0) continue;
    l.recompute_ns = l.host_recompute_ns = l.fwd_ns * 9 / 10;
    l.recompute_flops = l.fwd_flops;
    if (name == "h.0") block_rc[{l.step, l.rank}] = l.recompute_ns;
  }
  for (auto& l : p.layers)
    if (l.module_id == 0) {  // the model's row: backward − recomputation + recomputation
      const int64_t rc = block_rc.at({l.step, l.rank});
      l.bwd_ns -= rc, l.host_bwd_ns -= rc;
      l.recompute_ns = l.host_recompute_ns = rc;
      l.recompute_flops = l.fwd_flops;  // not true FLOPs; only its place in the rate matters
    }
  const LayerBreakdown b = build_layer_breakdown(p, f.data.events);
  ASSERT_TRUE(b.has_recompute);
  EXPECT_FALSE(before.has_recompute);
  const LayerRow& block = b.rows[size_t(b.find_name("h.0"))];
  const LayerRow& other_block = b.rows[size_t(b.find_name("h.1"))];
  const double rc_ms = f.mean_over_ranks(9, [](const auto& e) { return e.fwd_ms.at(2); }) * 0.9;
  EXPECT_NEAR(block.recompute_ms.mean, rc_ms, 1e-5);
  EXPECT_NEAR(block.total_ms.mean, block.fwd_ms.mean + block.bwd_ms.mean + block.recompute_ms.mean,
              kMsTol);
  EXPECT_NEAR(block.bar.recompute, block.recompute_ms.mean, kMsTol) << "no waits in it";
  EXPECT_EQ(other_block.recompute_ms.mean, 0.0);
  EXPECT_NEAR(
      block.flops_per_s,
      (block.fwd_flops + block.bwd_flops + block.recompute_flops) / (block.total_ms.mean * 1e-3),
      1e-6 * block.flops_per_s);
  // The model's time only moved from backward to recompute: the step is the same.
  const LayerRow& model = b.rows[0];
  EXPECT_NEAR(model.total_ms.mean, before.rows[0].total_ms.mean, kMsTol);
  EXPECT_NEAR(model.bwd_ms.mean, before.rows[0].bwd_ms.mean - block.recompute_ms.mean, 1e-5);
  EXPECT_NEAR(model.bar.backward + model.bar.recompute, before.rows[0].bar.backward, 1e-5);
  EXPECT_NEAR(b.step_ms.mean, before.step_ms.mean, kMsTol);
  EXPECT_NEAR(top_share_sum(b), 1.0, kShareTol);
  // Sorted by recomputation, the recomputed block comes first among the model's children.
  const auto order = layer_display_order(b, LayerColumn::recompute, false, {});
  std::vector<std::string> blocks;
  for (int i : order)
    if (b.rows[size_t(i)].type == "Block") blocks.push_back(b.rows[size_t(i)].name);
  EXPECT_EQ(blocks, (std::vector<std::string>{"h.0", "h.1"}));
}

TEST(LayerBreakdown, SortOrdersKeepTheTree) {
  RunFixture f(FixtureRunSpec{.n_layer = 12});
  const LayerBreakdown b = build_layer_breakdown(f.data.profile, f.data.events);
  const auto all = [](int) { return true; };
  // Model order.
  const auto tree = layer_display_order(b, LayerColumn::tree, true, all);
  ASSERT_EQ(tree.size(), b.rows.size());
  for (size_t i = 0; i + 3 < tree.size(); ++i) EXPECT_EQ(tree[i], int(i));

  // By total time, descending: siblings never increase, every child follows its parent.
  const auto by_total = layer_display_order(b, LayerColumn::total, false, all);
  ASSERT_EQ(by_total.size(), b.rows.size());
  std::vector<int> position(b.rows.size());
  for (size_t i = 0; i < by_total.size(); ++i) position[size_t(by_total[i])] = int(i);
  for (const LayerRow& r : b.rows) {
    std::vector<int> kids = r.children;
    std::sort(kids.begin(), kids.end(),
              [&](int x, int y) { return position[size_t(x)] < position[size_t(y)]; });
    for (size_t k = 1; k < kids.size(); ++k)
      EXPECT_GE(b.rows[size_t(kids[k - 1])].total_ms.mean, b.rows[size_t(kids[k])].total_ms.mean);
    for (int c : r.children) EXPECT_GT(position[size_t(c)], position[size_t(&r - b.rows.data())]);
  }
  // Top level by total: the model first (most of the step), the smallest last.
  EXPECT_EQ(by_total.front(), 0);
  // Ascending reverses the siblings.
  const auto top_asc = layer_display_order(b, LayerColumn::share, true, [](int) { return false; });
  ASSERT_EQ(top_asc.size(), 4u);
  for (size_t k = 1; k < top_asc.size(); ++k)
    EXPECT_LE(b.rows[size_t(top_asc[k - 1])].share, b.rows[size_t(top_asc[k])].share);
  EXPECT_EQ(top_asc.back(), 0);

  // By name: natural order, h.2 before h.10.
  const auto by_name = layer_display_order(
      b, LayerColumn::name, true, [&](int row) { return b.rows[size_t(row)].name == "model"; });
  std::vector<std::string> blocks;
  for (int i : by_name)
    if (b.rows[size_t(i)].type == "Block") blocks.push_back(b.rows[size_t(i)].name);
  ASSERT_EQ(blocks.size(), 12u);
  for (int l = 0; l < 12; ++l) EXPECT_EQ(blocks[size_t(l)], "h." + std::to_string(l));
  // Collapsed rows hide their subtree.
  EXPECT_EQ(by_name.size(), 4u + b.rows[0].children.size());
}

TEST(LayerBreakdown, NaturalCompare) {
  EXPECT_LT(natural_compare("h.2", "h.10"), 0);
  EXPECT_GT(natural_compare("h.10.mlp", "h.9.mlp"), 0);
  EXPECT_EQ(natural_compare("h.02", "h.2"), 0);
  EXPECT_LT(natural_compare("h", "h.0"), 0);
  EXPECT_LT(natural_compare("attn", "mlp"), 0);
}

}  // namespace
}  // namespace hybrid::gui
