// TrainSummary's JSON: the --result file and the run store's summary_json.
#include <fmt/format.h>

#include <cmath>

#include "engine/trainer.h"

namespace hybrid {

using namespace engine;
using profiler::RunStatus;

// Communication bytes per step (all, and per group with a pipeline) and the
// pipeline's waiting shares.
void TrainSummary::add_comm_json(nlohmann::json& j) const {
  nlohmann::json comm = nlohmann::json::object();
  for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
    comm[std::string(profiler::collective_name(profiler::CollectiveKind(k)))] =
        comm_bytes_per_step[size_t(k)];
  j["comm_bytes_per_step"] = comm;
  if (pipeline_stages > 1)
    j["pipeline"] = {{"stages", pipeline_stages},
                     {"waiting_fraction_median", pipeline_waiting_fraction},
                     {"waiting_fraction_by_rank", pipeline_waiting_by_rank},
                     {"bubble_closed_form", pipeline_bubble_closed_form}};
  if (!comm_bytes_by_group.empty()) {
    nlohmann::json groups = nlohmann::json::object();
    for (const auto& [group, bytes] : comm_bytes_by_group)
      for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
        groups[group][std::string(profiler::collective_name(profiler::CollectiveKind(k)))] =
            bytes[size_t(k)];
    j["comm_bytes_per_step_by_group"] = groups;
  }
}

nlohmann::json TrainSummary::to_json() const {
  nlohmann::json mem_current = nlohmann::json::object(), mem_peak = nlohmann::json::object();
  for (int c = 0; c < kMemCategoryCount; ++c) {
    const std::string name(mem_category_name(MemCategory(c)));
    mem_current[name] = memory.current[size_t(c)];
    mem_peak[name] = memory.peak[size_t(c)];
  }
  nlohmann::json j = {
      {"status", profiler::to_string(status)},
      {"steps", steps},
      {"global_step", global_step},
      {"final_loss", final_loss},
      {"losses", losses},
      {"ms_per_step_median", ms_per_step_median},
      {"tokens_per_s", tokens_per_s},
      {"samples_per_s", samples_per_s},
      {"flops_per_step", flops_per_step},
      {"achieved_flops_per_s", achieved_flops_per_s},
      {"skipped_steps", skipped_steps},
      {"exposed_comm_ms_per_step", exposed_comm_ms_per_step},
      {"peak_memory_bytes", mem_peak},
      {"peak_memory_total_bytes", memory.total_peak},
      {"world_size", world_size},
  };
  if (predicted_peak_bytes) {
    j["predicted_peak_bytes"] = *predicted_peak_bytes;
    nlohmann::json pm = nlohmann::json::object();
    for (int c = 0; c < kMemCategoryCount; ++c)
      pm[std::string(mem_category_name(MemCategory(c)))] = predicted_memory[size_t(c)];
    j["predicted_memory_bytes"] = pm;
  }
  if (host_memory.total_peak > 0) {  // the offloaded optimizer's host memory
    nlohmann::json hp = nlohmann::json::object(), hm = nlohmann::json::object();
    for (int c = 0; c < kMemCategoryCount; ++c) {
      hp[std::string(mem_category_name(MemCategory(c)))] = host_memory.peak[size_t(c)];
      hm[std::string(mem_category_name(MemCategory(c)))] = predicted_host_memory[size_t(c)];
    }
    j["peak_host_memory_bytes"] = hp;
    j["peak_host_memory_total_bytes"] = host_memory.total_peak;
    j["predicted_host_memory_bytes"] = hm;
  }
  uint64_t nvme_total = 0;
  for (auto b : nvme_bytes) nvme_total += b;
  if (nvme_total > 0) {  // the NVMe offload's swap files
    nlohmann::json nm = nlohmann::json::object(), np = nlohmann::json::object();
    for (int c = 0; c < kMemCategoryCount; ++c) {
      nm[std::string(mem_category_name(MemCategory(c)))] = nvme_bytes[size_t(c)];
      np[std::string(mem_category_name(MemCategory(c)))] = predicted_nvme_bytes[size_t(c)];
    }
    j["nvme_bytes"] = nm;
    j["nvme_total_bytes"] = nvme_total;
    j["predicted_nvme_bytes"] = np;
    nlohmann::json io_json = nlohmann::json::object();
    for (int k = 0; k < profiler::kIoKindCount; ++k)
      io_json[std::string(profiler::io_name(profiler::IoKind(k)))] = {
          {"requests", io[size_t(k)].requests},
          {"bytes", io[size_t(k)].bytes},
          {"seconds", io[size_t(k)].seconds},
          {"gbps", io[size_t(k)].gbps()}};
    j["io"] = io_json;
  }
  add_comm_json(j);
  if (!gemm.is_null()) j["gemm"] = gemm;
  if (!std::isnan(unigram_entropy))
    j["data"] = {{"unigram_entropy", unigram_entropy}, {"entropy_rate", entropy_rate}};
  if (run_id) j["run_id"] = run_id;
  if (status != RunStatus::ok) j["error"] = {{"kind", error_kind}, {"message", error}};
  return j;
}

}  // namespace hybrid
