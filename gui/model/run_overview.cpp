#include "gui/model/run_overview.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/statistics.h"
#include "gui/model/stats.h"

namespace hybrid::gui {

namespace {

// The step curves, skipped steps and headline figures.
void add_steps(RunOverview& o, const std::vector<profiler::StepRow>& steps) {
  o.loss = {"loss", "", {}, {}};
  o.loss_scale = {"loss scale", "", {}, {}};
  o.step_ms = {"step time", "ms", {}, {}};
  o.tokens_per_s = {"tokens/s", "tok/s", {}, {}};
  std::vector<double> step_ms, tokens, flops;
  for (const auto& s : steps) {
    const double x = double(s.step);
    o.loss.x.push_back(x);
    o.loss.y.push_back(s.loss);
    o.loss_scale.x.push_back(x);
    o.loss_scale.y.push_back(s.loss_scale);
    o.step_ms.x.push_back(x);
    o.step_ms.y.push_back(s.step_ms);
    o.tokens_per_s.x.push_back(x);
    o.tokens_per_s.y.push_back(s.tokens_per_s);
    step_ms.push_back(s.step_ms);
    if (s.skipped) {
      o.skipped_steps.push_back(s.step);
    } else {
      tokens.push_back(s.tokens_per_s);
      flops.push_back(s.flops_per_s);
    }
    if (std::isfinite(s.loss)) o.final_loss = s.loss;
  }
  if (!steps.empty()) o.last_loss_finite = std::isfinite(steps.back().loss);
  o.steps = int64_t(steps.size());
  o.median_step_ms = base::median(step_ms);
  o.median_tokens_per_s = base::median(tokens);
  o.median_flops_per_s = base::median(flops);
}

// Memory by category (the largest over ranks) and the totals.
void add_memory(RunOverview& o, const std::vector<profiler::MemoryRow>& memory) {
  std::map<std::string, MemoryCategory> cats;
  std::map<std::string, bool> all_predicted;
  for (const auto& m : memory) {
    auto [it, inserted] = cats.try_emplace(m.category);
    MemoryCategory& c = it->second;
    if (inserted) {
      c.category = m.category;
      all_predicted[m.category] = true;
    }
    c.current_bytes = std::max(c.current_bytes, m.current_bytes);
    if (inserted || m.peak_bytes > c.peak_bytes) {
      c.peak_bytes = m.peak_bytes;
      c.peak_rank = m.rank;
    }
    if (m.predicted_bytes)
      c.predicted_bytes = std::max(c.predicted_bytes.value_or(0), *m.predicted_bytes);
    else
      all_predicted[m.category] = false;
  }
  bool predicted_everywhere = !cats.empty();
  uint64_t predicted_total = 0;
  for (auto& [name, c] : cats) {
    o.peak_total_bytes += c.peak_bytes;
    if (all_predicted[name] && c.predicted_bytes)
      predicted_total += *c.predicted_bytes;
    else
      predicted_everywhere = false;
    o.memory.push_back(c);
  }
  if (predicted_everywhere) o.predicted_total_bytes = predicted_total;
}

}  // namespace

RunOverview build_run_overview(const profiler::RunProfile& p) {
  RunOverview o;
  o.run = p.run;
  add_steps(o, p.steps);
  add_memory(o, p.memory);
  return o;
}

}  // namespace hybrid::gui
