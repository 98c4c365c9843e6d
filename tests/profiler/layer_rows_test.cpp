// Layer rows from scope events with known answers: own times, FLOPs and MACs
// added up the tree, recomputation moved out of the ancestors' backward, rows
// of scoped modules only when no FLOPs travel (an imported trace), device times.
#include "profiler/tables/layer_rows.h"

#include <gtest/gtest.h>

namespace hybrid::profiler {
namespace {

// model(0) ← block(1) ← {linear(2), act(3)}
std::vector<ModuleInfo> tree() {
  std::vector<ModuleInfo> modules;
  for (int32_t parent : {-1, 0, 1, 1}) {
    ModuleInfo m;
    m.id = int32_t(modules.size());
    m.parent_id = parent;
    modules.push_back(m);
  }
  return modules;
}

Event scope(Category c, int32_t module, int64_t start, int64_t end, uint64_t flops = 0,
            int rank = 0, int32_t step = 3) {
  Event e;
  e.category = c;
  e.module_id = module;
  e.start_ns = start;
  e.dur_ns = end - start;
  e.flops = flops;
  e.rank = uint16_t(rank);
  e.step = step;
  return e;
}

const LayerStat& row(const std::vector<LayerStat>& rows, int32_t module) {
  for (const LayerStat& r : rows)
    if (r.module_id == module) return r;
  throw std::runtime_error("no row");
}

TEST(LayerRows, InclusiveFlopsMacsAndRecomputation) {
  using C = Category;
  const std::vector<Event> events = {
      scope(C::forward, 0, 0, 100),           scope(C::forward, 1, 10, 90),
      scope(C::forward, 2, 20, 40, 1000),     scope(C::forward, 3, 50, 60, 10),
      scope(C::backward, 0, 100, 300),        scope(C::recompute, 1, 110, 150),
      scope(C::recompute, 2, 115, 135, 1000), scope(C::backward, 1, 160, 290),
      scope(C::backward, 2, 170, 210, 2000),  scope(C::backward, 3, 220, 230, 20)};
  const int32_t macs[] = {2};
  const auto rows = layer_rows(events, tree(), {.mac_modules = macs, .device_times = false});
  ASSERT_EQ(rows.size(), 4u);
  const LayerStat& fc = row(rows, 2);
  EXPECT_EQ(fc.fwd_ns, 20);
  EXPECT_EQ(fc.bwd_ns, 40);
  EXPECT_EQ(fc.calls, 1);
  EXPECT_EQ(fc.fwd_macs, 500u);
  EXPECT_EQ(fc.bwd_macs, 1000u);
  EXPECT_EQ(fc.recompute_ns, 20);
  EXPECT_EQ(fc.recompute_flops, 1000u);
  EXPECT_EQ(fc.host_fwd_ns, 20);  // on the CPU the host time is the time
  EXPECT_EQ(row(rows, 3).fwd_macs, 0u);
  const LayerStat& block = row(rows, 1);  // its recompute ran outside its own backward
  EXPECT_EQ(block.fwd_flops, 1010u);
  EXPECT_EQ(block.bwd_flops, 2020u);
  EXPECT_EQ(block.fwd_macs, 500u);
  EXPECT_EQ(block.bwd_ns, 130);
  EXPECT_EQ(block.recompute_ns, 40);
  EXPECT_EQ(block.recompute_flops, 1000u);
  const LayerStat& model = row(rows, 0);  // the outermost recompute leaves its backward
  EXPECT_EQ(model.bwd_ns, 160);
  EXPECT_EQ(model.recompute_ns, 40);
  EXPECT_EQ(model.fwd_ns + model.bwd_ns + model.recompute_ns, 300);
  EXPECT_EQ(model.bwd_macs, 1000u);
  EXPECT_EQ(model.host_bwd_ns, 160);
}

TEST(LayerRows, ScopedModulesOnlyWithoutFlopsSortedByStepRankModule) {
  using C = Category;
  // An imported trace: scopes without FLOPs, two ranks, two steps.
  const std::vector<Event> events = {scope(C::forward, 2, 0, 10, 0, 1, 4),
                                     scope(C::forward, 2, 0, 30, 0, 0, 4),
                                     scope(C::backward, 3, 0, 20, 0, 1, 3)};
  const auto rows = layer_rows(events, tree());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(std::tie(rows[0].step, rows[0].rank, rows[0].module_id), std::tuple(3, 1, 3));
  EXPECT_EQ(std::tie(rows[1].step, rows[1].rank, rows[1].fwd_ns), std::tuple(4, 0, 30));
  EXPECT_EQ(std::tie(rows[2].step, rows[2].rank, rows[2].fwd_ns), std::tuple(4, 1, 10));
}

TEST(LayerRows, DeviceTimesReplaceTheScopes) {
  std::vector<Event> events = {scope(Category::forward, 2, 0, 100, 1000)};
  Event kernel = scope(Category::kernel, 2, 10, 40);
  kernel.scope = Category::forward;
  kernel.lane = kLaneGpuBase;
  events.push_back(kernel);
  const auto rows = layer_rows(events, tree(), {.mac_modules = {}, .device_times = true});
  const LayerStat& fc = row(rows, 2);
  EXPECT_EQ(fc.fwd_ns, 30);
  EXPECT_EQ(fc.host_fwd_ns, 100);
  EXPECT_EQ(fc.fwd_flops, 1000u);
  EXPECT_EQ(row(rows, 0).fwd_ns, 30);  // the device time is inclusive too
}

}  // namespace
}  // namespace hybrid::profiler
