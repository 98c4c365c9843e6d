#include "autotune/generate_confirm.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "base/dispersion.h"
#include "base/statistics.h"

namespace hybrid::autotune {

std::optional<MetricInterval> generate_interval(Metric m, const GenerateTrial& t) {
  if (t.status != "ok" || t.tpot_ms.empty()) return std::nullopt;
  std::vector<double> v = t.tpot_ms;
  std::sort(v.begin(), v.end());
  const base::RankInterval ri = base::median_rank_interval(v.size());
  const double med = base::median(v), lo = v[ri.lo - 1], hi = v[ri.hi - 1];
  if (med <= 0 || lo <= 0) return std::nullopt;
  if (m == Metric::latency) return MetricInterval{t.value * lo / med, t.value * hi / med};
  return MetricInterval{t.value * med / hi, t.value * med / lo};
}

std::vector<size_t> generate_ties(Metric m, const GenerateSweepResult& r, size_t max_tied,
                                  bool confirm_best) {
  if (!r.best) return {};
  const size_t b = *r.best;
  std::vector<size_t> others;
  for (size_t i = 0; i < r.trials.size(); ++i)
    if (i != b && r.trials[i].status == "ok") others.push_back(i);
  std::sort(others.begin(), others.end(),
            [&](size_t x, size_t y) { return better(m, r.trials[x].value, r.trials[y].value); });
  std::vector<size_t> tied = {b};
  const auto best_iv = generate_interval(m, r.trials[b]);
  for (size_t i : others) {
    const auto iv = generate_interval(m, r.trials[i]);
    if (best_iv && iv && overlap(*best_iv, *iv) && tied.size() < max_tied) tied.push_back(i);
  }
  if (tied.size() == 1 && confirm_best && !others.empty()) tied.push_back(others.front());
  return tied.size() >= 2 ? tied : std::vector<size_t>{};
}

GenerateConfirmation decide_generate_confirmation(Metric m, std::vector<size_t> tied,
                                                  std::vector<std::vector<double>> values,
                                                  int rounds) {
  GenerateConfirmation c;
  c.rounds = rounds;
  c.tied = std::move(tied);
  c.values = std::move(values);
  for (const auto& v : c.values) c.medians.push_back(v.empty() ? 0.0 : base::median(v));
  for (size_t k = 1; k < c.values.size(); ++k)
    if (!c.values[k].empty() &&
        (c.values[c.winner].empty() || better(m, c.medians[k], c.medians[c.winner])))
      c.winner = k;
  const auto worst = [&](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end(),
                             [&](double a, double b) { return better(m, b, a); });
  };
  const auto best = [&](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end(),
                             [&](double a, double b) { return better(m, a, b); });
  };
  c.decided = !c.values[c.winner].empty();
  for (size_t k = 0; k < c.values.size(); ++k)
    if (k != c.winner && !c.values[k].empty())
      c.decided = c.decided && better(m, worst(c.values[c.winner]), best(c.values[k]));
  return c;
}

std::optional<GenerateConfirmation> confirm_generate(const GenerateSpec& s, GenerateSweepResult& r,
                                                     const GenerateSweepOptions& o, int rounds,
                                                     bool confirm_best, std::ostream& log) {
  const auto tied = generate_ties(s.metric, r, 3, confirm_best);
  if (tied.empty()) return std::nullopt;
  if (rounds < 1) {
    std::string keys;
    for (size_t i : tied) keys += (keys.empty() ? "" : ", ") + r.trials[i].candidate.key();
    log << "within noise of each other: " << keys << " (--confirm-rounds 0: not confirmed)\n";
    return std::nullopt;
  }
  std::vector<std::vector<double>> values;
  for (size_t i : tied) values.push_back({r.trials[i].value});
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < tied.size(); ++k) {
      const size_t c = (k + size_t(round)) % tied.size();
      GenerateSweepOptions ro = o;
      ro.dir = (std::filesystem::path(o.dir) / fmt::format("confirm-{}", round + 1)).string();
      const GenerateTrial t = run_generate_trial(s, r.trials[tied[c]].candidate, ro);
      if (t.status == "cancelled") return std::nullopt;
      if (t.status == "ok") values[c].push_back(t.value);
    }
  GenerateConfirmation c = decide_generate_confirmation(s.metric, tied, std::move(values), rounds);
  r.best = c.tied[c.winner];
  std::string parts;
  for (size_t k = 0; k < c.tied.size(); ++k)
    parts += fmt::format("{}{} {}", k ? ", " : "", r.trials[c.tied[k]].candidate.key(),
                         format_metric(s.metric, c.medians[k]));
  const std::string w = r.trials[*r.best].candidate.key();
  c.summary = fmt::format(
      "confirmation ({} interleaved round(s)), medians: {}; {}", rounds, parts,
      c.decided ? w + " wins (its worst run beats the others' best)"
                : "still a tie: equivalent within noise, " + w + " written (best median)");
  log << c.summary << "\n";
  return c;
}

void add_confirmation_json(nlohmann::json& out, const GenerateSweepResult& r,
                           const GenerateConfirmation& c) {
  nlohmann::json cands = nlohmann::json::array();
  for (size_t k = 0; k < c.tied.size(); ++k)
    cands.push_back({{"key", r.trials[c.tied[k]].candidate.key()},
                     {"values", c.values[k]},
                     {"median", c.medians[k]}});
  out["confirmation"] = {
      {"rounds", c.rounds}, {"decided", c.decided}, {"summary", c.summary}, {"candidates", cands}};
  out["value"] = c.medians[c.winner];
}

}  // namespace hybrid::autotune
