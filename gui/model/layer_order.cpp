// Sorting the layer tree for display: siblings by a column, names in natural order.
#include <algorithm>

#include "gui/model/layer_breakdown.h"

namespace hybrid::gui {

int natural_compare(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare the numbers without leading zeros: longer is larger, then digit by digit.
      size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js ? -1 : 1;
      if (int c = a.substr(is, ie - is).compare(b.substr(js, je - js)); c != 0)
        return c < 0 ? -1 : 1;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
    ++i;
    ++j;
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

namespace {

double numeric_key(const LayerRow& r, LayerColumn c) {
  switch (c) {
    case LayerColumn::fwd:
      return r.fwd_ms.mean;
    case LayerColumn::bwd:
      return r.bwd_ms.mean;
    case LayerColumn::recompute:
      return r.recompute_ms.mean;
    case LayerColumn::host:
      return r.host_fwd_ms.mean + r.host_bwd_ms.mean + r.host_recompute_ms.mean;
    case LayerColumn::exposed:
      return r.exposed_ms.mean;
    case LayerColumn::total:
      return r.total_ms.mean;
    case LayerColumn::flops:
      return r.fwd_flops + r.bwd_flops + r.recompute_flops;
    case LayerColumn::flops_per_s:
      return r.flops_per_s;
    case LayerColumn::share:
      return r.share;
    case LayerColumn::params:
      return double(r.params);
    case LayerColumn::activations:
      return double(r.activation_bytes);
    case LayerColumn::tree:
    case LayerColumn::name:
      break;
  }
  return 0;
}

}  // namespace

std::vector<int> layer_display_order(const LayerBreakdown& b, LayerColumn column, bool ascending,
                                     const std::function<bool(int)>& expanded) {
  auto sorted = [&](std::vector<int> ids) {
    if (column == LayerColumn::tree) {
      if (!ascending) std::reverse(ids.begin(), ids.end());
      return ids;
    }
    std::stable_sort(ids.begin(), ids.end(), [&](int x, int y) {
      const LayerRow& a = b.rows[size_t(x)];
      const LayerRow& c = b.rows[size_t(y)];
      if (column == LayerColumn::name) {
        const int cmp = natural_compare(a.name, c.name);
        return ascending ? cmp < 0 : cmp > 0;
      }
      const double ka = numeric_key(a, column), kc = numeric_key(c, column);
      return ascending ? ka < kc : ka > kc;
    });
    return ids;
  };
  std::vector<int> out;
  auto visit = [&](auto&& self, int row) -> void {
    out.push_back(row);
    if (expanded && !expanded(row)) return;
    for (int c : sorted(b.rows[size_t(row)].children)) self(self, c);
  };
  for (int r : sorted(b.top_rows)) visit(visit, r);
  return out;
}

}  // namespace hybrid::gui
