#include "gui/model/compare_model.h"

#include <map>
#include <utility>

#include "gui/model/run_overview.h"

namespace hybrid::gui {

RunComparison compare_runs(const profiler::RunProfile& a, const LayerBreakdown& al,
                           const profiler::RunProfile& b, const LayerBreakdown& bl) {
  RunComparison c;
  c.a_run = a.run.id;
  c.b_run = b.run.id;
  const RunOverview ao = build_run_overview(a), bo = build_run_overview(b);
  c.a_median_step_ms = ao.median_step_ms;
  c.b_median_step_ms = bo.median_step_ms;
  c.a_tokens_per_s = ao.median_tokens_per_s;
  c.b_tokens_per_s = bo.median_tokens_per_s;
  c.a_profiled_step_ms = al.step_ms.mean;
  c.b_profiled_step_ms = bl.step_ms.mean;

  // Module rows match by name, the step rows by kind (their names are fixed).
  auto key = [](const LayerRow& r) { return std::make_pair(int(r.kind), r.name); };
  std::map<std::pair<int, std::string>, size_t> index;
  auto tree_order = [](const LayerBreakdown& l) {
    return layer_display_order(l, LayerColumn::tree, true, {});
  };
  for (int i : tree_order(al)) {
    const LayerRow& r = al.rows[size_t(i)];
    index[key(r)] = c.rows.size();
    c.rows.push_back(
        {r.name, r.kind, r.depth, r.total_ms.mean, std::nullopt, r.share, std::nullopt});
  }
  for (int i : tree_order(bl)) {
    const LayerRow& r = bl.rows[size_t(i)];
    auto it = index.find(key(r));
    if (it == index.end()) {
      index[key(r)] = c.rows.size();
      c.rows.push_back(
          {r.name, r.kind, r.depth, std::nullopt, r.total_ms.mean, std::nullopt, r.share});
    } else {
      c.rows[it->second].b_ms = r.total_ms.mean;
      c.rows[it->second].b_share = r.share;
    }
  }
  return c;
}

}  // namespace hybrid::gui
