#include "engine/train_reports.h"

#include "base/statistics.h"
#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/parallel/pipeline_schedule.h"

namespace hybrid {

using engine::comm::Communicator;

namespace {

// Bytes per step by collective kind between two readings of the counters.
CollectiveBytes per_step(const Communicator::Counters& after, const Communicator::Counters& before,
                         size_t steps) {
  CollectiveBytes bytes{};
  for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
    bytes[size_t(k)] = double(after.bytes[k] - before.bytes[k]) / double(steps);
  return bytes;
}

}  // namespace

void summarize_steps(std::span<const StepRecord> records, double tokens_per_step, int seq_len,
                     TrainSummary& out) {
  auto& t = out.training;
  std::vector<double> ms;
  for (const StepRecord& r : records) ms.push_back(r.ms);
  const double median = base::median(ms);
  t.steps = int64_t(records.size());
  t.final_loss = t.losses.back();
  auto& rate = out.throughput;
  rate.ms_per_step_median = median;
  rate.tokens_per_s = tokens_per_step / (median / 1e3);
  rate.samples_per_s = tokens_per_step / seq_len / (median / 1e3);
  rate.achieved_flops_per_s = rate.flops_per_step / (median / 1e3);
}

CommMeter::CommMeter(const Engine& engine)
    : before_(engine.comm_counters()), groups_before_(engine.comm_counters_by_group()) {}

CommunicationReport CommMeter::report(const Engine& engine,
                                      std::span<const StepRecord> records) const {
  CommunicationReport out;
  double exposed_ms = 0.0;
  for (const StepRecord& r : records) exposed_ms += r.exposed_comm_ms;
  out.exposed_ms_per_step = exposed_ms / double(records.size());
  out.bytes_per_step = per_step(engine.comm_counters(), before_, records.size());
  const auto groups = engine.comm_counters_by_group();
  for (size_t g = 0; groups.size() > 1 && g < groups.size(); ++g)
    out.bytes_by_group.emplace_back(
        groups[g].first, per_step(groups[g].second, groups_before_[g].second, records.size()));
  return out;
}

MemoryReport measure_memory(Engine& engine) {
  MemoryReport out;
  out.device = engine.allocator().stats();
  out.host = engine.host_allocator().stats();
  out.nvme = engine.nvme_bytes();
  for (const auto& st : engine.comm_tracer().io_stats()) {
    auto& t = out.io[size_t(st.kind)];
    t.requests += st.count;
    t.bytes += st.total_bytes;
    t.seconds += double(st.total_ns) * 1e-9;
  }
  return out;
}

void add_memory_prediction(const engine::Config& cfg, Engine& engine, MemoryReport& out) {
  const auto predicted = engine::predict_stage_memory(cfg, engine.world_size(),
                                                      engine.pipeline_stage(), engine.backend());
  out.predicted_peak_bytes = predicted.total();
  out.predicted_device = predicted.bytes;
  out.predicted_host = predicted.host;
  out.predicted_nvme = predicted.nvme;
}

std::optional<double> pipeline_waiting(const Engine& engine) {
  const auto& p = engine.last_pipeline_times();
  if (p.schedule_ms <= 0) return std::nullopt;
  return p.waiting_ms / p.schedule_ms;
}

PipelineReport pipeline_report(const engine::Config& cfg, Engine& engine,
                               std::span<const StepRecord> records) {
  PipelineReport out;
  const int p = engine.pipeline_stages();
  if (p == 1) return out;
  std::vector<double> waiting;
  for (const StepRecord& r : records)
    if (r.pipeline_waiting) waiting.push_back(*r.pipeline_waiting);
  out.stages = p;
  out.waiting_fraction = base::median(waiting);
  out.bubble_closed_form = engine::bubble_fraction(p, cfg.gradient_accumulation_steps);
  const auto all = engine.all_gather_floats({float(out.waiting_fraction)});
  out.waiting_by_rank.assign(all.begin(), all.end());
  return out;
}

}  // namespace hybrid
