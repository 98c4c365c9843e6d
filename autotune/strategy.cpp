#include "autotune/strategy.h"

#include <fmt/format.h>

#include <algorithm>

#include "autotune/tune_error.h"

namespace hybrid::autotune {

namespace {

class GridStrategy final : public Strategy {
 public:
  std::string name() const override { return "grid"; }
  std::optional<size_t> next(const std::vector<size_t>& remaining,
                             const std::vector<Observation>&) override {
    if (remaining.empty()) return std::nullopt;
    return *std::min_element(remaining.begin(), remaining.end());
  }
};

class RandomStrategy final : public Strategy {
 public:
  RandomStrategy(uint64_t seed, size_t n) : order_(seeded_permutation(n, seed)) {}
  std::string name() const override { return "random"; }
  std::optional<size_t> next(const std::vector<size_t>& remaining,
                             const std::vector<Observation>&) override {
    for (size_t i : order_)
      if (std::find(remaining.begin(), remaining.end(), i) != remaining.end()) return i;
    return std::nullopt;
  }

 private:
  std::vector<size_t> order_;
};

class ModelStrategy final : public Strategy {
 public:
  ModelStrategy(std::vector<StepFeatures> f, ModelStrategyOptions o)
      : features_(std::move(f)), opts_(o) {}
  std::string name() const override { return "model"; }

  std::optional<size_t> next(const std::vector<size_t>& remaining,
                             const std::vector<Observation>& history) override {
    // Refit from scratch on everything measured (resumed sweeps included).
    model_ = CostModel();
    std::optional<double> best;
    size_t ok = 0;
    for (const auto& h : history) {
      if (!h.ok || h.index >= features_.size()) continue;
      model_.observe(features_[h.index], h.step_s);
      ++ok;
      if (!best || better(opts_.metric, h.metric, *best)) best = h.metric;
    }
    std::optional<size_t> pick;
    double pick_value = 0;
    for (size_t i : remaining) {
      const double v = predicted_metric(i);
      if (!pick || better(opts_.metric, v, pick_value)) pick = i, pick_value = v;
    }
    if (!pick) return std::nullopt;
    if (best && ok >= opts_.min_trials) {
      const double gain =
          higher_is_better(opts_.metric) ? pick_value / *best - 1.0 : *best / pick_value - 1.0;
      if (gain <= opts_.min_gain) {
        stop_ = fmt::format(
            "cost model: no untried candidate is predicted to beat the best by more than {:.0f} % "
            "(best prediction {}, measured best {}; model error {:.0f} % over {} trials)",
            opts_.min_gain * 100, format_metric(opts_.metric, pick_value),
            format_metric(opts_.metric, *best), model_.mean_relative_error() * 100, ok);
        return std::nullopt;
      }
    }
    return pick;
  }

  std::optional<double> predicted_step_s(size_t i) const override {
    if (i >= features_.size()) return std::nullopt;
    return model_.predict_s(features_[i]);
  }
  std::string stop_reason() const override { return stop_; }

 private:
  double predicted_metric(size_t i) const {
    const auto& f = features_[i];
    return metric_from_step_time(opts_.metric, model_.predict_s(f), f.samples_per_step,
                                 f.tokens_per_step, f.flops_per_step);
  }

  std::vector<StepFeatures> features_;
  ModelStrategyOptions opts_;
  CostModel model_;
  std::string stop_;
};

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<size_t> seeded_permutation(size_t n, uint64_t seed) {
  std::vector<size_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i;
  uint64_t state = seed;
  for (size_t i = n; i > 1; --i) {
    // Unbiased bound by rejection: values at or above the largest multiple of i are redrawn.
    const uint64_t bound = uint64_t(i), limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = splitmix64(state);
    while (r >= limit);
    std::swap(p[i - 1], p[size_t(r % bound)]);
  }
  return p;
}

std::unique_ptr<Strategy> make_grid_strategy() { return std::make_unique<GridStrategy>(); }

std::unique_ptr<Strategy> make_random_strategy(uint64_t seed, size_t n) {
  return std::make_unique<RandomStrategy>(seed, n);
}

std::unique_ptr<Strategy> make_model_strategy(std::vector<StepFeatures> features,
                                              ModelStrategyOptions opts) {
  return std::make_unique<ModelStrategy>(std::move(features), opts);
}

std::string parse_strategy(const std::string& name) {
  if (name == "grid" || name == "gridsearch") return "grid";
  if (name == "random") return "random";
  if (name == "model" || name == "model_based") return "model";
  throw TuneError(fmt::format("--strategy must be grid, random or model, got \"{}\"", name));
}

size_t trials_since_improvement(Metric m, const std::vector<Observation>& history) {
  std::optional<double> best;
  size_t since = 0;
  for (const auto& h : history) {
    if (h.ok && (!best || better(m, h.metric, *best))) {
      best = h.metric;
      since = 0;
    } else {
      ++since;
    }
  }
  return since;
}

}  // namespace hybrid::autotune
