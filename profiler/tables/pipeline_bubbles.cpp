#include "profiler/tables/pipeline_bubbles.h"

#include <algorithm>
#include <map>

namespace hybrid::profiler {

int stage_of(const RunProfile& p, int rank) {
  for (const RankInfo& r : p.ranks)
    if (r.rank == rank) return r.pipeline_stage;
  return 0;
}

bool has_pipeline(const RunProfile& p) {
  return std::any_of(p.ranks.begin(), p.ranks.end(),
                     [](const RankInfo& r) { return r.pipeline_stage > 0; }) ||
         std::any_of(p.step_ranks.begin(), p.step_ranks.end(),
                     [](const StepRankRow& s) { return s.bubble_ms > 0; });
}

std::vector<StageBubble> stage_bubbles(const RunProfile& p) {
  if (!has_pipeline(p)) return {};
  struct RankSums {
    double bubble = 0, step = 0;
    int steps = 0;
  };
  std::map<int, RankSums> per_rank;
  for (const StepRankRow& s : p.step_ranks) {
    RankSums& r = per_rank[s.rank];
    r.bubble += s.bubble_ms;
    r.step += s.compute_ms + s.exposed_comm_ms;
    r.steps += 1;
  }
  std::map<int, StageBubble> stages;
  for (const auto& [rank, sums] : per_rank) {
    StageBubble& b = stages[stage_of(p, rank)];
    b.ranks += 1;
    b.bubble_ms += sums.bubble / sums.steps;
    b.step_ms += sums.step / sums.steps;
  }
  std::vector<StageBubble> out;
  for (auto& [stage, b] : stages) {
    b.stage = stage;
    b.bubble_ms /= b.ranks;
    b.step_ms /= b.ranks;
    out.push_back(b);
  }
  return out;
}

}  // namespace hybrid::profiler
