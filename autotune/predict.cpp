#include "autotune/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "autotune/tune_error.h"
#include "base/host.h"
#include "base/statistics.h"
#include "base/units.h"
#include "profiler/store/run_store.h"

namespace hybrid::autotune {

ClusterRates rates_for(ClusterRates rates, const Layout& layout) {
  rates.ranks_per_host = layout.ranks_per_host;
  rates.link = layout.hosts > 1 ? "inter_host" : "intra_host";
  return rates;
}

namespace {

Layout layout_of_run(profiler::RunStore& store, const profiler::RunInfo& run) {
  Layout l;
  l.world = std::max(1, run.world_size);
  std::map<std::string, int> per_host;
  for (const auto& r : store.ranks(run.id)) ++per_host[r.host];
  l.hosts = std::max<int>(1, int(per_host.size()));
  l.ranks_per_host = l.world;
  if (!per_host.empty()) {
    l.ranks_per_host = 0;
    for (const auto& [host, n] : per_host) l.ranks_per_host = std::max(l.ranks_per_host, n);
  }
  return l;
}

bool same_model(const engine::Config& a, const engine::Config& b) {
  return a.model.n_layer == b.model.n_layer && a.model.n_embd == b.model.n_embd &&
         a.model.n_head == b.model.n_head && a.model.vocab_size == b.model.vocab_size &&
         a.seq_len() == b.seq_len() && a.device == b.device;
}

// Every finished trial of the base config's model, each with the features of
// the world size and placement it ran with.
std::vector<Observation> observations(profiler::RunStore& store, const engine::Config& base,
                                      const ClusterRates& rates) {
  std::vector<Observation> obs;
  for (const auto& sweep : store.sweeps())
    for (const auto& t : store.trials(sweep.id)) {
      if (t.status != profiler::TrialStatus::ok || !t.latency_ms || !t.run_id) continue;
      const auto run = store.find_run(*t.run_id);
      if (!run) continue;
      const Layout layout = layout_of_run(store, *run);
      engine::Config cfg;
      try {
        cfg = engine::parse_config(nlohmann::json::parse(t.config_json), layout.world);
      } catch (const std::exception&) {
        continue;  // written by another version: not comparable
      }
      if (!same_model(cfg, base)) continue;
      obs.push_back({t.key, layout, step_features(cfg, layout.world, rates_for(rates, layout)),
                     *t.latency_ms / 1e3});
    }
  return obs;
}

CostModel fitted(const std::vector<Observation>& obs, int below_world = 0) {
  CostModel m;
  for (const auto& o : obs)
    if (below_world == 0 || o.layout.world < below_world) m.observe(o.features, o.step_s);
  return m;
}

std::string level_of(double e) { return e <= 0.10 ? "high" : e <= 0.25 ? "medium" : "low"; }

}  // namespace

Confidence confidence_of(const std::vector<Observation>& obs, int target_world) {
  Confidence c;
  if (obs.empty()) {
    c.level = "low";
    c.expected_error = 1.0;
    c.reasons.push_back(
        "no finished trial of this model in the store: the prior weights alone (run sweeps at "
        "two or more world sizes first)");
    return c;
  }
  std::set<int> worlds;
  for (const auto& o : obs) worlds.insert(o.layout.world);
  const double fit_error = fitted(obs).mean_relative_error();
  if (worlds.size() == 1) {
    const int w = *worlds.begin();
    c.expected_error = fit_error;
    c.level = target_world == w ? level_of(fit_error) : "low";
    if (target_world != w)
      c.reasons.push_back(fmt::format(
          "trials at one world size only ({} ranks): how the model carries to {} ranks is "
          "unchecked (sweep at a second world size)",
          w, target_world));
    return c;
  }
  // Hold out the largest world size: how well do the smaller ones predict it?
  const int top = *worlds.rbegin(), below = *std::next(worlds.rbegin());
  const CostModel small = fitted(obs, top);
  std::vector<double> errors;
  for (const auto& o : obs)
    if (o.layout.world == top)
      errors.push_back(std::abs(small.predict_s(o.features) / o.step_s - 1.0));
  const double held_out = base::median(errors);
  const double steps_measured = std::log2(double(top) / below);
  const double steps_ahead = std::max(0.0, std::log2(double(target_world) / top));
  c.expected_error = std::max(fit_error, held_out * steps_ahead / steps_measured);
  c.level = level_of(c.expected_error);
  c.reasons.push_back(fmt::format(
      "fitted to the trials below {} ranks, the model predicted the {} trial(s) at {} ranks "
      "within {:.1f} % (median); {} ranks is {:.1f} doubling(s) past {} (the check spanned "
      "{:.1f}); fit error over all {} trial(s) {:.1f} %",
      top, errors.size(), top, 100 * held_out, target_world, steps_ahead, top, steps_measured,
      obs.size(), 100 * fit_error));
  return c;
}

namespace {

void check(const PredictOptions& o) {
  if (o.config.empty()) throw TuneError("predict: --config is required");
  if (o.world < 1) throw TuneError(fmt::format("predict: --world must be >= 1, got {}", o.world));
  if (o.hosts < 1 || o.hosts > o.world)
    throw TuneError(fmt::format("predict: --hosts must be between 1 and --world ({}), got {}",
                                o.world, o.hosts));
  if (!std::filesystem::exists(o.db))
    throw TuneError(
        fmt::format("predict: no run store at {} (run a sweep or a probe first)", o.db));
}

void host_caveats(const Prediction& p, const ClusterRates& rates, Confidence& c) {
  if (p.target.hosts < 2) return;
  const bool probed_across = std::any_of(rates.bandwidth.begin(), rates.bandwidth.end(),
                                         [](const auto& s) { return s.link == "inter_host"; });
  const bool ran_across = std::any_of(p.observations.begin(), p.observations.end(),
                                      [](const auto& o) { return o.layout.hosts > 1; });
  if (!probed_across) {
    c.level = "low";
    c.reasons.push_back(
        "the probe measured no link between hosts: collectives use the within-host figures "
        "(run `hybrid-tune probe --hostfile FILE`)");
  } else if (!ran_across) {
    if (c.level == "high") c.level = "medium";
    c.reasons.push_back(
        "no trial ran across hosts: the time between hosts rests on the probe's alpha-beta fit "
        "alone");
  }
}

}  // namespace

Prediction predict(const PredictOptions& opts) {
  check(opts);
  TuneOptions t;
  t.config = opts.config;
  t.space = opts.space;
  t.db = opts.db;
  t.nprocs = opts.world;
  t.dry_run = true;
  const SweepPlan plan = plan_sweep(t);

  profiler::RunStore store(opts.db, profiler::OpenMode::read_only);
  auto probe = store.latest_probe(base::host_name());
  if (!probe) probe = store.latest_probe();
  const ClusterRates rates = probe ? rates_from_probe(*probe, plan.device.kind)
                                   : default_rates(plan.device.kind, opts.world);
  Prediction p;
  p.metric = plan.settings.metric;
  p.target = {opts.world, opts.hosts, (opts.world + opts.hosts - 1) / opts.hosts};
  p.rates_source = rates.source;
  p.observations = observations(store, plan.base_cfg, rates);
  const CostModel model = fitted(p.observations);
  p.weights = model.weights();
  p.fit_error = model.mean_relative_error();
  p.confidence = confidence_of(p.observations, opts.world);
  if (!probe) {
    p.confidence.level = "low";
    p.confidence.reasons.push_back(
        "no probe in the store: default rates (run `hybrid-tune probe`)");
  }
  host_caveats(p, rates, p.confidence);

  const ClusterRates target = rates_for(rates, p.target);
  for (size_t i = 0; i < plan.runnable.size(); ++i) {
    const auto& c = plan.runnable[i];
    const StepFeatures f = step_features(c.parsed, opts.world, target);
    const double s = model.predict_s(f);
    p.ranked.push_back({c.key, s,
                        metric_from_step_time(p.metric, s, f.samples_per_step, f.tokens_per_step,
                                              f.flops_per_step),
                        plan.memory[i].total()});
  }
  std::stable_sort(p.ranked.begin(), p.ranked.end(), [&](const auto& a, const auto& b) {
    return better(p.metric, a.metric, b.metric);
  });
  p.pruned = plan.pruned;
  return p;
}

void print_prediction(const Prediction& p, std::ostream& out, int top) {
  std::map<int, int> per_world;
  for (const auto& o : p.observations) ++per_world[o.layout.world];
  std::string seen;
  for (const auto& [w, n] : per_world)
    seen += fmt::format("{}{} at {}", seen.empty() ? "" : ", ", n, w);
  out << fmt::format("predicting {} ranks on {} host(s) ({} per host)\n", p.target.world,
                     p.target.hosts, p.target.ranks_per_host);
  out << fmt::format("rates: {}\n", p.rates_source);
  out << fmt::format("fitted to {} trial(s){}; weights", p.observations.size(),
                     seen.empty() ? "" : " (" + seen + " ranks)");
  for (size_t f = 0; f < kFeatureCount; ++f)
    out << fmt::format(" {}={:.2f}", feature_name(f), p.weights[f]);
  out << "\n";
  out << fmt::format("confidence: {} (expected error ±{:.0f} %)\n", p.confidence.level,
                     100 * p.confidence.expected_error);
  for (const auto& r : p.confidence.reasons) out << "  " << r << "\n";
  const double e = p.confidence.expected_error;
  out << fmt::format("{:<4} {:<40} {:>12} {:>12} {:>24} {:>20}\n", "rank", "candidate", "mem/rank",
                     "pred. step", "range", fmt::format("pred. {}", metric_name(p.metric)));
  for (size_t i = 0; i < p.ranked.size() && (top <= 0 || int(i) < top); ++i) {
    const auto& c = p.ranked[i];
    out << fmt::format("{:<4} {:<40} {:>12} {:>12} {:>24} {:>20}\n", i + 1, c.key,
                       base::format_bytes(c.memory_bytes), base::format_duration(c.step_s),
                       base::format_duration(c.step_s * std::max(0.0, 1 - e)) + " - " +
                           base::format_duration(c.step_s * (1 + e)),
                       format_metric(p.metric, c.metric));
  }
  if (!p.pruned.empty())
    out << fmt::format("{} candidate(s) over the memory budget at {} ranks (not ranked)\n",
                       p.pruned.size(), p.target.world);
}

}  // namespace hybrid::autotune
