#include "autotune/tie_break.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/dispersion.h"

namespace hybrid::autotune {

using profiler::TrialRow;

namespace {

std::string with_interval(Metric m, double v, const std::optional<MetricInterval>& iv) {
  if (!iv) return format_metric(m, v);
  return format_metric(m, v) + " " + format_interval(m, *iv);
}

std::string first_pass(Metric m, const std::vector<TrialRow>& tied) {
  std::string s;
  for (const auto& t : tied)
    s += fmt::format("{}{} {}", s.empty() ? "" : " vs ", t.key,
                     with_interval(m, t.metric.value_or(0.0), metric_interval(m, t)));
  return s;
}

}  // namespace

ConfirmationResult decide_confirmation(Metric m, const std::vector<TrialRow>& tied,
                                       const std::vector<std::vector<double>>& step_ms,
                                       int rounds) {
  ConfirmationResult r;
  r.rounds = rounds;
  std::optional<size_t> best;
  for (size_t c = 0; c < tied.size(); ++c) {
    r.spreads.push_back(spread_of(step_ms[c]));
    std::vector<double> metric;  // per step, in the metric's units (a monotone map of the time)
    for (double t : step_ms[c]) metric.push_back(metric_at_step(m, tied[c], t));
    const base::Dispersion d = base::describe_dispersion(metric);
    r.medians.push_back(d.median);
    r.intervals.push_back(metric.empty() ? std::nullopt
                                         : std::optional(MetricInterval{d.ci_low, d.ci_high}));
    if (!metric.empty() && (!best || better(m, d.median, r.medians[*best]))) best = c;
  }
  r.winner = best.value_or(0);
  r.decided = best.has_value();
  for (size_t c = 0; c < tied.size() && r.decided; ++c)
    if (c != r.winner && r.intervals[c] && overlap(*r.intervals[c], *r.intervals[r.winner]))
      r.decided = false;
  std::string confirmed;
  for (size_t c = 0; c < tied.size(); ++c)
    confirmed += fmt::format(
        "{}{} {}", c ? ", " : "", tied[c].key,
        r.intervals[c] ? with_interval(m, r.medians[c], r.intervals[c]) : std::string("failed"));
  const std::string& w = tied[r.winner].key;
  r.summary = fmt::format(
      "first pass: {}; confirmation ({} interleaved round(s)): {} -> {}", first_pass(m, tied),
      rounds, confirmed,
      !best ? fmt::format("no confirmation trial succeeded: {} kept", w)
      : r.decided
          ? fmt::format("{} wins (its interval is clear of the others')", w)
          : fmt::format("still a tie: equivalent within noise, {} written (best median)", w));
  return r;
}

std::optional<ConfirmationResult> run_confirmation(Metric m, const std::vector<TrialRow>& tied,
                                                   int rounds, const ConfirmMeasure& measure,
                                                   const std::function<bool()>& stop) {
  std::vector<std::vector<double>> pooled(tied.size());
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < tied.size(); ++k) {
      if (stop && stop()) return std::nullopt;
      const size_t c = (k + size_t(round)) % tied.size();
      const auto steps = measure(c, round);
      pooled[c].insert(pooled[c].end(), steps.begin(), steps.end());
    }
  return decide_confirmation(m, tied, pooled, rounds);
}

profiler::TieBreak tie_break_row(Metric m, int64_t sweep_id, const std::vector<TrialRow>& tied,
                                 const ConfirmationResult& r) {
  nlohmann::json cands = nlohmann::json::array();
  for (size_t c = 0; c < tied.size(); ++c) {
    nlohmann::json j = {{"key", tied[c].key},
                        {"first_metric", tied[c].metric.value_or(0.0)},
                        {"confirmed_steps", r.spreads[c].count}};
    if (const auto iv = metric_interval(m, tied[c])) j["first_interval"] = {iv->lo, iv->hi};
    if (r.intervals[c]) {
      j["confirmed_metric"] = r.medians[c];
      j["confirmed_interval"] = {r.intervals[c]->lo, r.intervals[c]->hi};
      j["confirmed_step_median_ms"] = r.spreads[c].median_ms;
    }
    cands.push_back(j);
  }
  profiler::TieBreak tb;
  tb.sweep_id = sweep_id;
  tb.candidates_json = cands.dump();
  tb.rounds = r.rounds;
  tb.winner_key = tied[r.winner].key;
  tb.decided = r.decided;
  tb.summary = r.summary;
  return tb;
}

std::optional<profiler::TieBreak> stored_confirmation(const std::vector<profiler::TieBreak>& stored,
                                                      const std::vector<TrialRow>& tied,
                                                      int rounds) {
  for (auto it = stored.rbegin(); it != stored.rend(); ++it) {
    if (it->rounds != rounds) continue;
    const auto cands = nlohmann::json::parse(it->candidates_json, nullptr, false);
    if (!cands.is_array() || cands.size() != tied.size()) continue;
    bool same = true;
    for (size_t c = 0; c < tied.size() && same; ++c)
      same = cands[c].is_object() && cands[c].value("key", std::string()) == tied[c].key;
    if (same) return *it;
  }
  return std::nullopt;
}

}  // namespace hybrid::autotune
