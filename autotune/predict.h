// `hybrid-tune predict --world N --hosts H`: the candidates of a config ranked
// for a cluster larger than the one measured. The cost model's features are
// evaluated at N ranks on H hosts (collectives from the probe's alpha–beta fit
// on the link class they would cross, a rank's GEMM rate from the ranks that
// share its host); its weights are fitted to every finished trial in the run
// store of the same model, each at the world size and placement it ran with.
//
// How far to trust it is measured, not assumed: the model is refitted without
// the largest world size measured and asked to predict those trials; that
// extrapolation error, scaled by how many more doublings the target lies
// beyond, is the expected error of the prediction.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/cost_model.h"
#include "autotune/sweep_plan.h"

namespace hybrid::autotune {

struct PredictOptions {
  std::string config, space, db = "results/hybrid.db";
  int world = 0;  // ranks of the target cluster
  int hosts = 1;  // hosts they are spread over (evenly)
  int top = 0;    // rows to print (0: all)
};

// Where a run's ranks were: its world size and how they sat on hosts.
struct Layout {
  int world = 1;
  int hosts = 1;
  int ranks_per_host = 1;  // the most on any host
};

// One finished trial, as the fit sees it.
struct Observation {
  std::string key;
  Layout layout;
  StepFeatures features;
  double step_s = 0;
};

struct Confidence {
  std::string level;          // "high" (≤ 10 %), "medium" (≤ 25 %), "low"
  double expected_error = 0;  // relative, of a predicted step time
  std::vector<std::string> reasons;
};

struct PredictedCandidate {
  std::string key;
  double step_s = 0;
  double metric = 0;
  uint64_t memory_bytes = 0;  // per rank
};

struct Prediction {
  Layout target;
  std::string rates_source;
  std::vector<Observation> observations;
  Weights weights{};
  double fit_error = 0;  // mean relative error over the observations
  Confidence confidence;
  std::vector<PredictedCandidate> ranked;  // best first by the sweep's metric
  std::vector<profiler::PrunedCandidate> pruned;
  Metric metric = Metric::throughput;
};

// Cluster rates as seen by runs with this layout.
ClusterRates rates_for(ClusterRates rates, const Layout& layout);

// The expected error of predicting `target_world` from these observations
// (features already evaluated at each observation's own layout).
Confidence confidence_of(const std::vector<Observation>& obs, int target_world);

// Throws TuneError naming the bad option; reads the store, writes nothing.
Prediction predict(const PredictOptions& opts);
void print_prediction(const Prediction& p, std::ostream& out, int top);

}  // namespace hybrid::autotune
