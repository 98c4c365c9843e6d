// TrainSummary's JSON (the --result file and the run store's summary_json) and
// its closing lines.
#include "engine/train_summary.h"

#include <fmt/format.h>

#include <cmath>

#include "base/atomic_file.h"
#include "base/units.h"

namespace hybrid {

using namespace engine;
using profiler::RunStatus;

namespace {

// {"params": …, "grads": …, …}: one value per memory category.
nlohmann::json by_category(const CategoryBytes& bytes) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (listed_category(MemCategory(c), bytes[size_t(c)]))
      j[std::string(mem_category_name(MemCategory(c)))] = bytes[size_t(c)];
  return j;
}

// {"all_reduce": …, "reduce_scatter": …, …}: one value per collective kind.
nlohmann::json by_collective(const CollectiveBytes& bytes) {
  nlohmann::json j = nlohmann::json::object();
  for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
    j[std::string(profiler::collective_name(profiler::CollectiveKind(k)))] = bytes[size_t(k)];
  return j;
}

// "<title> params 1.00 MiB grads ... | total 3.00 MiB": the categories used.
std::string category_line(std::string title, const CategoryBytes& bytes, uint64_t total) {
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (bytes[size_t(c)])
      title += fmt::format(" {} {}", mem_category_name(MemCategory(c)),
                           base::format_bytes(bytes[size_t(c)]));
  return title + fmt::format(" | total {}", base::format_bytes(total));
}

}  // namespace

nlohmann::json TrainingReport::to_json() const {
  return {{"steps", steps},
          {"global_step", global_step},
          {"final_loss", final_loss},
          {"losses", losses},
          {"skipped_steps", skipped_steps}};
}

nlohmann::json ThroughputReport::to_json() const {
  return {{"ms_per_step_median", ms_per_step_median},
          {"tokens_per_s", tokens_per_s},
          {"samples_per_s", samples_per_s},
          {"flops_per_step", flops_per_step},
          {"achieved_flops_per_s", achieved_flops_per_s}};
}

uint64_t MemoryReport::nvme_total() const {
  uint64_t total = 0;
  for (auto b : nvme) total += b;
  return total;
}

nlohmann::json MemoryReport::to_json() const {
  nlohmann::json j = {{"peak_memory_bytes", by_category(device.peak)},
                      {"peak_memory_total_bytes", device.total_peak}};
  if (predicted_peak_bytes) {
    j["predicted_peak_bytes"] = *predicted_peak_bytes;
    j["predicted_memory_bytes"] = by_category(predicted_device);
  }
  if (host.total_peak > 0) {  // the offloaded optimizer's host memory
    j["peak_host_memory_bytes"] = by_category(host.peak);
    j["peak_host_memory_total_bytes"] = host.total_peak;
    j["predicted_host_memory_bytes"] = by_category(predicted_host);
  }
  if (const uint64_t total = nvme_total(); total > 0) {  // the NVMe offload's swap files
    j["nvme_bytes"] = by_category(nvme);
    j["nvme_total_bytes"] = total;
    j["predicted_nvme_bytes"] = by_category(predicted_nvme);
    nlohmann::json io_json = nlohmann::json::object();
    for (int k = 0; k < profiler::kIoKindCount; ++k)
      io_json[std::string(profiler::io_name(profiler::IoKind(k)))] = {
          {"requests", io[size_t(k)].requests},
          {"bytes", io[size_t(k)].bytes},
          {"seconds", io[size_t(k)].seconds},
          {"gbps", io[size_t(k)].gbps()}};
    j["io"] = io_json;
  }
  return j;
}

nlohmann::json CommunicationReport::to_json() const {
  nlohmann::json j = {{"exposed_comm_ms_per_step", exposed_ms_per_step},
                      {"comm_bytes_per_step", by_collective(bytes_per_step)}};
  if (!bytes_by_group.empty()) {
    nlohmann::json groups = nlohmann::json::object();
    for (const auto& [group, bytes] : bytes_by_group) groups[group] = by_collective(bytes);
    j["comm_bytes_per_step_by_group"] = groups;
  }
  return j;
}

nlohmann::json PipelineReport::to_json() const {
  if (stages <= 1) return nlohmann::json::object();
  return {{"pipeline",
           {{"stages", stages},
            {"waiting_fraction_median", waiting_fraction},
            {"waiting_fraction_by_rank", waiting_by_rank},
            {"bubble_closed_form", bubble_closed_form}}}};
}

nlohmann::json DataReport::to_json() const {
  if (std::isnan(unigram_entropy)) return nlohmann::json::object();
  return {{"data", {{"unigram_entropy", unigram_entropy}, {"entropy_rate", entropy_rate}}}};
}

nlohmann::json TrainSummary::to_json() const {
  nlohmann::json j = {{"status", profiler::to_string(status)}, {"world_size", world_size}};
  for (const nlohmann::json& part : {training.to_json(), throughput.to_json(), memory.to_json(),
                                     comm.to_json(), pipeline.to_json(), data.to_json()})
    j.update(part);
  if (!gemm.is_null()) j["gemm"] = gemm;
  if (!rollouts.empty()) j["rollouts"] = rollouts;
  if (!val_losses.empty()) j["val_losses"] = val_losses;
  if (!batches.empty()) j["batches"] = batches;
  if (run_id) j["run_id"] = run_id;
  if (status != RunStatus::ok) j["error"] = {{"kind", error_kind}, {"message", error}};
  return j;
}

void write_train_result(const std::string& path, const TrainSummary& s) {
  if (path.empty()) return;
  base::write_file_atomic(path, s.to_json().dump(2) + "\n");
}

std::vector<std::string> summary_lines(const TrainSummary& s) {
  const auto& t = s.training;
  const auto& m = s.memory;
  std::vector<std::string> lines = {
      fmt::format("done: {} steps, median {:.1f} ms/step, {:.0f} tokens/s, {}, final loss {:.4f}, "
                  "{} skipped",
                  t.steps, s.throughput.ms_per_step_median, s.throughput.tokens_per_s,
                  base::format_flop_rate(s.throughput.achieved_flops_per_s), t.final_loss,
                  t.skipped_steps),
      category_line("peak memory per rank:", m.device.peak, m.device.total_peak)};
  if (m.host.total_peak > 0)
    lines.push_back(
        category_line("peak host memory per rank (offload):", m.host.peak, m.host.total_peak));
  if (m.nvme_total() == 0) return lines;
  lines.push_back(category_line("NVMe swap files per rank:", m.nvme, m.nvme_total()));
  const auto& rd = m.io[size_t(profiler::IoKind::nvme_read)];
  const auto& wr = m.io[size_t(profiler::IoKind::nvme_write)];
  lines.push_back(
      fmt::format("NVMe I/O of rank 0: read {} in {} requests ({}), wrote {} in {} requests ({})",
                  base::format_bytes(rd.bytes), rd.requests, base::format_gbps(rd.gbps()),
                  base::format_bytes(wr.bytes), wr.requests, base::format_gbps(wr.gbps())));
  return lines;
}

}  // namespace hybrid
