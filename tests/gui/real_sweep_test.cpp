// The view-models on a database written by a real short sweep (hybrid-tune
// running hybrid-train trials under mpirun, tests/gui/sweep_db.h). Expected
// figures come from SQL queries on the file itself, a path independent of the
// store's readers and of the view-models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "gui/model/compare_model.h"
#include "gui/model/database.h"
#include "gui/model/layer_breakdown.h"
#include "gui/model/run_overview.h"
#include "gui/model/sweep_model.h"
#include "gui/model/timeline_model.h"
#include "tests/gui/sweep_db.h"

namespace hybrid::gui {
namespace {

using profiler::test::query_sql;

constexpr double kMsTol = 1e-6;     // ms: ns integers summed, rounding only
constexpr double kShareTol = 1e-9;  // Σ of the top-level shares against 1

double sql_num(const std::filesystem::path& db, const std::string& sql) {
  const std::string v = query_sql(db, sql);
  return v.empty() || v == "NULL" ? 0.0 : std::stod(v);
}

std::vector<double> sql_column(const std::filesystem::path& db, const std::string& sql) {
  std::vector<double> out;
  std::string all = query_sql(db, sql), line;
  std::istringstream in(all);
  while (std::getline(in, line))
    if (!line.empty() && line != "NULL") out.push_back(std::stod(line));
  return out;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

class RealSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& s = test::real_sweep_db();
    HYBRID_REQUIRE_BUILT_DB(s);
    path_ = s.path;
    db_ = std::make_unique<Database>(path_);
    ASSERT_TRUE(db_->is_open()) << db_->error();
    ASSERT_EQ(db_->sweeps().size(), 2u);
  }
  std::string q(const std::string& sql) const { return query_sql(path_, sql); }
  // Ok trials' runs of the grid sweep, in trial order.
  std::vector<int64_t> ok_runs() const {
    std::vector<int64_t> ids;
    for (double v : sql_column(
             path_, "SELECT run_id FROM trials WHERE sweep_id = 1 AND status = 'ok' ORDER BY id"))
      ids.push_back(int64_t(v));
    return ids;
  }
  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
};

TEST_F(RealSweep, LeaderboardMatchesTheTrialsTable) {
  const auto& sweep = db_->sweeps()[0];
  const SweepTable t = build_sweep_table(sweep, db_->trials(sweep.id), db_->pruned(sweep.id));
  EXPECT_EQ(double(t.rows.size()),
            sql_num(path_, "SELECT COUNT(*) FROM trials WHERE sweep_id = 1"));
  EXPECT_EQ(t.rows.size(), 6u);  // micro batch 1, 2, 4 × ZeRO 1, 2
  EXPECT_EQ(t.count(profiler::TrialStatus::ok), 6);
  ASSERT_GE(t.best, 0);
  EXPECT_EQ(double(t.rows[size_t(t.best)].trial.id),
            sql_num(path_,
                    "SELECT id FROM trials WHERE sweep_id = 1 AND status = 'ok' ORDER BY metric "
                    "DESC LIMIT 1"));
  // Config columns from each trial's ds_config: the grid's points, each once.
  std::set<std::pair<int, int>> points;
  for (const auto& r : t.rows) points.insert({*r.config.micro_batch, *r.config.zero_stage});
  EXPECT_EQ(points,
            (std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}}));
  EXPECT_EQ(t.scatter.size(), 6u);
  // The memory model pruned micro batch 64 at both stages, over the 12 MiB budget.
  ASSERT_EQ(t.pruned.size(), 2u);
  for (size_t i = 0; i < t.pruned.size(); ++i) {
    EXPECT_EQ(t.pruned_config[i].micro_batch, 64);
    EXPECT_GT(t.pruned[i].predicted_mem_bytes, t.pruned[i].budget_bytes);
  }
  // Sorted by the metric, best first.
  const auto order = sweep_display_order(t, SweepColumn::metric, false);
  EXPECT_EQ(order.front(), t.best);
  for (size_t i = 1; i < order.size(); ++i)
    EXPECT_GE(*t.rows[size_t(order[i - 1])].trial.metric, *t.rows[size_t(order[i])].trial.metric);

  // The second sweep ran the pruned point anyway: a real out-of-memory trial.
  const auto& nop = db_->sweeps()[1];
  const SweepTable o = build_sweep_table(nop, db_->trials(nop.id), db_->pruned(nop.id));
  ASSERT_EQ(o.rows.size(), 1u);
  EXPECT_EQ(o.rows[0].trial.status, profiler::TrialStatus::oom);
  EXPECT_FALSE(o.rows[0].trial.reason.empty());
  EXPECT_EQ(o.best, -1);
  EXPECT_TRUE(o.scatter.empty());
}

TEST_F(RealSweep, LayerRowsAndSharesOfEveryRun) {
  for (int64_t run : ok_runs()) {
    SCOPED_TRACE("run " + std::to_string(run));
    const auto data = db_->load_run(run);
    ASSERT_TRUE(data.has_value()) << db_->error();
    const LayerBreakdown b = build_layer_breakdown(data->profile, data->events);
    const std::string r = std::to_string(run);
    ASSERT_EQ(double(b.step),
              sql_num(path_, "SELECT MAX(step) FROM layer_stats WHERE run_id = " + r));
    EXPECT_EQ(b.ranks, (std::vector<int>{0, 1}));
    EXPECT_TRUE(b.has_events);
    const std::string s = std::to_string(b.step);
    // One row per module, named as the model names it.
    const double modules = sql_num(path_, "SELECT COUNT(*) FROM modules WHERE run_id = " + r);
    size_t module_rows = 0;
    for (const auto& row : b.rows) module_rows += row.kind == LayerRowKind::module;
    EXPECT_EQ(double(module_rows), modules);
    for (const auto& row : b.rows) {
      if (row.kind != LayerRowKind::module) continue;
      const std::string m = std::to_string(row.module_id);
      const std::string where =
          " FROM layer_stats WHERE run_id = " + r + " AND step = " + s + " AND module_id = " + m;
      if (sql_num(path_, "SELECT COUNT(*)" + where) == 0)
        continue;  // a container summed from its children
      EXPECT_NEAR(row.fwd_ms.mean, sql_num(path_, "SELECT AVG(fwd_ns) / 1e6" + where), kMsTol)
          << row.name;
      EXPECT_NEAR(row.bwd_ms.mean, sql_num(path_, "SELECT AVG(bwd_ns) / 1e6" + where), kMsTol)
          << row.name;
      EXPECT_NEAR(row.total_ms.max, sql_num(path_, "SELECT MAX(fwd_ns + bwd_ns) / 1e6" + where),
                  kMsTol);
      EXPECT_NEAR(row.total_ms.min, sql_num(path_, "SELECT MIN(fwd_ns + bwd_ns) / 1e6" + where),
                  kMsTol);
      EXPECT_DOUBLE_EQ(row.fwd_flops, sql_num(path_, "SELECT AVG(fwd_flops)" + where));
      if (row.children.empty()) {
        EXPECT_EQ(double(row.params),
                  sql_num(path_, "SELECT n_params FROM modules WHERE run_id = " + r +
                                     " AND module_id = " + m));
      }
    }
    EXPECT_EQ(double(b.rows[0].params),
              sql_num(path_, "SELECT SUM(n_params) FROM modules WHERE run_id = " + r));
    // Shares of the top-level rows: 100 % of the step.
    double sum = 0;
    for (int i : b.top_rows) sum += b.rows[size_t(i)].share;
    EXPECT_NEAR(sum, 1.0, kShareTol);

    for (int rank : b.ranks) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      const LayerBreakdown one = build_layer_breakdown(data->profile, data->events, {b.step, rank});
      const std::string ev = " FROM events WHERE run_id = " + r + " AND step = " + s +
                             " AND rank = " + std::to_string(rank);
      // The step is the measured step event, unless the attributed parts exceed it.
      const double measured = sql_num(path_, "SELECT SUM(dur_ns) / 1e6" + ev + " AND category = 0");
      double other = 0, waits = 0;
      for (const auto& row : one.rows)
        if (row.kind == LayerRowKind::other) other = row.total_ms.mean;
      if (other > 0) {
        EXPECT_NEAR(one.step_ms.mean, measured, kMsTol);
      } else {
        EXPECT_GE(one.step_ms.mean, measured - kMsTol);
      }
      // Every wait event of the step lands in exactly one row, exposed or not.
      for (int i : one.top_rows)
        waits += one.rows[size_t(i)].exposed_ms.mean + one.rows[size_t(i)].blocked_ms.mean;
      EXPECT_NEAR(
          waits,
          sql_num(path_, "SELECT TOTAL(dur_ns) / 1e6" + ev + " AND category = 4 AND lane = 0"),
          1e-5);
      // Exposed = waits ∩ collectives, as the comm tracer books it (which also sees the
      // collectives of unprofiled neighbouring steps, so it may only be larger).
      double exposed = 0;
      for (int i : one.top_rows) exposed += one.rows[size_t(i)].exposed_ms.mean;
      EXPECT_LE(exposed,
                sql_num(path_, "SELECT exposed_comm_ms FROM step_ranks WHERE run_id = " + r +
                                   " AND step = " + s + " AND rank = " + std::to_string(rank)) +
                    1e-3);
    }
  }
}

TEST_F(RealSweep, SortOrdersOfARealTree) {
  const auto data = db_->load_run(ok_runs().back());
  const LayerBreakdown b = build_layer_breakdown(data->profile, data->events);
  const auto all = [](int) { return true; };
  for (LayerColumn col :
       {LayerColumn::total, LayerColumn::fwd, LayerColumn::share, LayerColumn::params}) {
    const auto order = layer_display_order(b, col, false, all);
    ASSERT_EQ(order.size(), b.rows.size());
    std::vector<size_t> pos(b.rows.size());
    for (size_t i = 0; i < order.size(); ++i) pos[size_t(order[i])] = i;
    auto key = [&](int i) {
      const LayerRow& r = b.rows[size_t(i)];
      switch (col) {
        case LayerColumn::fwd:
          return r.fwd_ms.mean;
        case LayerColumn::share:
          return r.share;
        case LayerColumn::params:
          return double(r.params);
        default:
          return r.total_ms.mean;
      }
    };
    // Siblings (and the top-level rows) in descending order; children after their parent.
    std::vector<std::vector<int>> groups = {b.top_rows};
    for (const auto& r : b.rows) groups.push_back(r.children);
    for (auto g : groups) {
      std::sort(g.begin(), g.end(), [&](int x, int y) { return pos[size_t(x)] < pos[size_t(y)]; });
      for (size_t k = 1; k < g.size(); ++k) EXPECT_GE(key(g[k - 1]), key(g[k]));
    }
    for (size_t i = 0; i < b.rows.size(); ++i)
      for (int c : b.rows[i].children) EXPECT_GT(pos[size_t(c)], pos[i]);
  }
  // Natural name order of the blocks.
  const auto by_name = layer_display_order(b, LayerColumn::name, true, all);
  std::vector<std::string> blocks;
  for (int i : by_name)
    if (b.rows[size_t(i)].type == "Block") blocks.push_back(b.rows[size_t(i)].name);
  EXPECT_EQ(blocks, (std::vector<std::string>{"h.0", "h.1"}));
}

TEST_F(RealSweep, TimelineLanesOfARealRun) {
  const int64_t run = ok_runs().front();
  const auto data = db_->load_run(run);
  const TimelineModel m = build_timeline(data->events, data->profile.ranks);
  const std::string r = std::to_string(run);
  ASSERT_EQ(double(m.event_count()),
            sql_num(path_, "SELECT COUNT(*) FROM events WHERE run_id = " + r));
  // Two CPU ranks: compute, comm, optimizer each, in rank order.
  ASSERT_EQ(m.lanes.size(), 6u);
  const LaneKind kinds[] = {LaneKind::compute, LaneKind::comm, LaneKind::optimizer};
  for (size_t i = 0; i < m.lanes.size(); ++i) {
    EXPECT_EQ(m.lanes[i].rank, int(i / 3));
    EXPECT_EQ(m.lanes[i].kind, kinds[i % 3]);
  }
  auto count = [&](const TimelineLane& l) {
    size_t n = 0;
    for (const auto& row : l.rows) n += row.events.size();
    return double(n);
  };
  for (const auto& lane : m.lanes) {
    const std::string where =
        " FROM events WHERE run_id = " + r + " AND rank = " + std::to_string(lane.rank);
    switch (lane.kind) {
      case LaneKind::comm:
        EXPECT_EQ(count(lane), sql_num(path_, "SELECT COUNT(*)" + where + " AND lane = 1"));
        break;
      case LaneKind::optimizer:
        EXPECT_EQ(count(lane),
                  sql_num(path_, "SELECT COUNT(*)" + where + " AND category = 3 AND lane = 0"));
        break;
      default:
        EXPECT_EQ(count(lane),
                  sql_num(path_, "SELECT COUNT(*)" + where + " AND category <> 3 AND lane = 0"));
    }
    for (const auto& row : lane.rows)
      for (size_t i = 1; i < row.events.size(); ++i)
        EXPECT_LE(row.events[i - 1].end_ns, row.events[i].start_ns);
  }
  // The compute lane nests step > model > block > attn/mlp > leaf (and module scopes
  // may hold a comm wait one deeper).
  EXPECT_GE(m.lanes[0].rows.size(), 5u);
  // Clocks: rank 1's step starts where its epoch says, relative to rank 0's.
  ASSERT_TRUE(m.clocks_aligned);
  // (Differences in SQL: wall-clock ns exceed a double's integer precision.)
  auto wall = [&](int rank) {
    return "(SELECT e.start_ns + k.epoch_unix_ns FROM events e JOIN run_ranks k ON k.run_id = "
           "e.run_id AND "
           "k.rank = e.rank WHERE e.run_id = " +
           r + " AND e.category = 0 AND e.rank = " + std::to_string(rank) +
           " ORDER BY e.start_ns LIMIT 1)";
  };
  const double wall_delta = sql_num(path_, "SELECT " + wall(1) + " - " + wall(0));
  auto first_step = [&](const TimelineLane& lane) {
    for (const auto& row : lane.rows)
      for (const auto& te : row.events)
        if (m.events[te.source].category == profiler::Category::step) return double(te.start_ns);
    return -1.0;
  };
  EXPECT_EQ(first_step(m.lanes[3]) - first_step(m.lanes[0]), wall_delta);
  // Layout: lanes stacked in order without gaps beyond the separator.
  const auto g = layout_lanes(m, 20, 4);
  for (size_t i = 1; i < g.size(); ++i) EXPECT_FLOAT_EQ(g[i].y, g[i - 1].y + g[i - 1].height + 4);
}

TEST_F(RealSweep, CompareDeltasOfTwoTrials) {
  const auto runs = ok_runs();
  const auto a = db_->load_run(runs.front()), b = db_->load_run(runs.back());
  const LayerBreakdown la = build_layer_breakdown(a->profile, a->events);
  const LayerBreakdown lb = build_layer_breakdown(b->profile, b->events);
  const RunComparison c = compare_runs(a->profile, la, b->profile, lb);
  const std::string ra = std::to_string(runs.front()), rb = std::to_string(runs.back());
  const double med_a =
      median_of(sql_column(path_, "SELECT step_ms FROM steps WHERE run_id = " + ra));
  const double med_b =
      median_of(sql_column(path_, "SELECT step_ms FROM steps WHERE run_id = " + rb));
  EXPECT_NEAR(c.a_median_step_ms, med_a, 1e-9);
  EXPECT_NEAR(c.step_delta_ms(), med_b - med_a, 1e-9);
  EXPECT_NEAR(*c.speedup(), med_a / med_b, 1e-9);
  // Same model: every module row on both sides; each delta from SQL, B minus A.
  size_t matched = 0;
  for (const auto& row : c.rows) {
    if (row.kind != LayerRowKind::module) continue;
    ASSERT_TRUE(row.a_ms && row.b_ms) << row.name;
    const std::string name = row.name == "model" ? "" : row.name;
    auto ms = [&](const std::string& run, int64_t step) {
      return sql_num(path_,
                     "SELECT AVG(l.fwd_ns + l.bwd_ns) / 1e6 FROM layer_stats l JOIN modules m ON "
                     "m.run_id = l.run_id AND m.module_id = l.module_id WHERE l.run_id = " +
                         run + " AND l.step = " + std::to_string(step) + " AND m.name = '" + name +
                         "'");
    };
    const double expect_a = ms(ra, la.step), expect_b = ms(rb, lb.step);
    if (expect_a == 0 && expect_b == 0) continue;  // containers without rows of their own
    EXPECT_NEAR(row.delta_ms(), expect_b - expect_a, 1e-6) << row.name;
    ++matched;
  }
  EXPECT_GE(matched, 20u);
}

TEST_F(RealSweep, OverviewOfARealRun) {
  const int64_t run = ok_runs().front();
  const auto data = db_->load_run(run);
  const RunOverview o = build_run_overview(data->profile);
  const std::string r = std::to_string(run);
  EXPECT_EQ(double(o.steps), sql_num(path_, "SELECT COUNT(*) FROM steps WHERE run_id = " + r));
  EXPECT_EQ(o.steps, 4);
  EXPECT_NEAR(o.median_step_ms,
              median_of(sql_column(path_, "SELECT step_ms FROM steps WHERE run_id = " + r)), 1e-9);
  EXPECT_EQ(double(o.memory.size()),
            sql_num(path_, "SELECT COUNT(DISTINCT category) FROM memory WHERE run_id = " + r));
  for (const auto& m : o.memory)
    EXPECT_EQ(double(m.peak_bytes),
              sql_num(path_, "SELECT MAX(peak_bytes) FROM memory WHERE run_id = " + r +
                                 " AND category = '" + m.category + "'"));
}

}  // namespace
}  // namespace hybrid::gui
