#include "gui/model/sweep_model.h"

#include <algorithm>
#include <cctype>

namespace hybrid::gui {

using profiler::TrialStatus;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<double> column_value(const SweepRow& r, SweepColumn c) {
  auto d = [](auto opt) -> std::optional<double> {
    if (opt) return double(*opt);
    return std::nullopt;
  };
  switch (c) {
    case SweepColumn::id:
      return double(r.trial.id);
    case SweepColumn::micro_batch:
      return d(r.config.micro_batch);
    case SweepColumn::grad_accum:
      return d(r.config.grad_accum);
    case SweepColumn::zero_stage:
      return d(r.config.zero_stage);
    case SweepColumn::reduce_bucket:
      return r.config.reduce_bucket;
    case SweepColumn::allgather_bucket:
      return r.config.allgather_bucket;
    case SweepColumn::overlap:
      return d(r.config.overlap_comm);
    case SweepColumn::metric:
      return r.trial.metric;
    case SweepColumn::tokens_per_s:
      return r.trial.tokens_per_s;
    case SweepColumn::latency:
      return r.trial.latency_ms;
    case SweepColumn::predicted_mem:
      return d(r.trial.predicted_mem_bytes);
    case SweepColumn::peak_mem:
      return d(r.trial.peak_mem_bytes);
    case SweepColumn::status:
      return double(int(r.trial.status));
    case SweepColumn::key:
    case SweepColumn::dtype:
    case SweepColumn::reason:
      break;
  }
  return std::nullopt;
}

std::optional<std::string> column_text(const SweepRow& r, SweepColumn c) {
  switch (c) {
    case SweepColumn::key:
      return r.trial.key;
    case SweepColumn::dtype:
      if (r.config.dtype().empty()) return std::nullopt;
      return std::string(r.config.dtype());
    case SweepColumn::reason:
      return r.trial.reason.empty() ? std::nullopt : std::optional<std::string>(r.trial.reason);
    default:
      return std::nullopt;
  }
}

bool is_text_column(SweepColumn c) {
  return c == SweepColumn::key || c == SweepColumn::dtype || c == SweepColumn::reason;
}

}  // namespace

SweepTable build_sweep_table(const profiler::SweepInfo& sweep,
                             const std::vector<profiler::TrialRow>& trials,
                             const std::vector<profiler::PrunedCandidate>& pruned) {
  SweepTable t;
  profiler::SweepLeaderboard& board = t;
  board = profiler::build_sweep_leaderboard(sweep, trials, pruned);
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const SweepRow& r = t.rows[i];
    if (r.trial.status == TrialStatus::ok && r.trial.metric && r.config.micro_batch)
      t.scatter.push_back({double(*r.config.micro_batch), *r.trial.metric,
                           r.config.zero_stage.value_or(-1), int(i)});
  }
  return t;
}

std::vector<int> sweep_display_order(const SweepTable& t, SweepColumn column, bool ascending,
                                     const SweepFilter& filter) {
  const std::string needle = lower(filter.text);
  std::vector<int> out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const SweepRow& r = t.rows[i];
    if (filter.ok_only && (r.trial.status != TrialStatus::ok || !r.trial.metric)) continue;
    if (!needle.empty()) {
      const std::string hay = lower(r.trial.key + "\n" + std::string(to_string(r.trial.status)) +
                                    "\n" + r.trial.reason + "\n" + std::string(r.config.dtype()));
      if (hay.find(needle) == std::string::npos) continue;
    }
    out.push_back(int(i));
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const SweepRow& ra = t.rows[size_t(a)];
    const SweepRow& rb = t.rows[size_t(b)];
    if (is_text_column(column)) {
      const auto va = column_text(ra, column), vb = column_text(rb, column);
      if (!va || !vb) return va.has_value() && !vb.has_value();
      return ascending ? *va < *vb : *va > *vb;
    }
    const auto va = column_value(ra, column), vb = column_value(rb, column);
    if (!va || !vb) return va.has_value() && !vb.has_value();
    return ascending ? *va < *vb : *va > *vb;
  });
  return out;
}

}  // namespace hybrid::gui
