// The column tables of a run's rows (profiler/profile_data.h, profiler/event.h):
// one per table of the run store, each column its name in the store and the
// member that holds it (profiler/columns.h says what follows from them).
#pragma once

#include <optional>
#include <tuple>

#include "profiler/columns.h"
#include "profiler/event.h"
#include "profiler/profile_data.h"

namespace hybrid::profiler::columns {

// Without its id (the store assigns it) and the writer's process start time
// (the store's own, for crash detection).
template <>
struct Table<RunInfo> {
  static constexpr const char* name = "runs";
  // What update_run rewrites.
  static constexpr auto description = std::tuple{
      member("name", &RunInfo::name),
      member("config_json", &RunInfo::config_json),
      member("host", &RunInfo::host),
      member("device", &RunInfo::device),
      member("backend", &RunInfo::backend),
      member("world_size", &RunInfo::world_size),
      member("dtype", &RunInfo::dtype),
      member("zero_stage", &RunInfo::zero_stage),
      member("micro_batch", &RunInfo::micro_batch),
      member("grad_accum", &RunInfo::grad_accum),
      member("seq_len", &RunInfo::seq_len),
      member("n_params", &RunInfo::n_params),
      member("git_revision", &RunInfo::git_revision),
      member("hybrid_version", &RunInfo::hybrid_version),
      member("summary_json", &RunInfo::summary_json),
  };
  static constexpr auto columns =
      std::tuple_cat(description, std::tuple{
                                      member("source", &RunInfo::source),
                                      member("started_at", &RunInfo::started_at),
                                      member("finished_at", &RunInfo::finished_at),
                                      member("status", &RunInfo::status),
                                      member("error", &RunInfo::error),
                                      member("writer_pid", &RunInfo::writer_pid),
                                      member("writer_host", &RunInfo::writer_host),
                                      member("last_update", &RunInfo::last_update),
                                  });
};

template <>
struct Table<RankInfo> {
  static constexpr const char* name = "run_ranks";
  static constexpr auto columns = std::tuple{
      member("rank", &RankInfo::rank),
      member("host", &RankInfo::host),
      member("pid", &RankInfo::pid),
      member("epoch_unix_ns", &RankInfo::epoch_unix_ns),
      member("local_rank", &RankInfo::local_rank),
      member("local_size", &RankInfo::local_size),
      member("threads", &RankInfo::threads),
      member("host_memory_bytes", &RankInfo::host_memory_bytes),
      member("pipeline_stage", &RankInfo::pipeline_stage),
  };
};

template <>
struct Table<StepRow> {
  static constexpr const char* name = "steps";
  static constexpr auto columns = std::tuple{
      member("step", &StepRow::step),
      member("loss", &StepRow::loss),
      member("lr", &StepRow::lr),
      member("loss_scale", &StepRow::loss_scale),
      member("skipped", &StepRow::skipped),
      member("grad_norm", &StepRow::grad_norm),
      member("step_ms", &StepRow::step_ms),
      member("tokens_per_s", &StepRow::tokens_per_s),
      member("flops_per_s", &StepRow::flops_per_s),
  };
};

template <>
struct Table<StepRankRow> {
  static constexpr const char* name = "step_ranks";
  static constexpr auto columns = std::tuple{
      member("step", &StepRankRow::step),
      member("rank", &StepRankRow::rank),
      member("compute_ms", &StepRankRow::compute_ms),
      member("comm_ms", &StepRankRow::comm_ms),
      member("exposed_comm_ms", &StepRankRow::exposed_comm_ms),
      member("bubble_ms", &StepRankRow::bubble_ms),
  };
};

template <>
struct Table<StepTimerRow> {
  static constexpr const char* name = "step_timers";
  static constexpr auto columns = std::tuple{
      member("step", &StepTimerRow::step),
      member("rank", &StepTimerRow::rank),
      member("name", &StepTimerRow::name),
      member("ms", &StepTimerRow::ms),
  };
};

template <>
struct Table<ModuleInfo> {
  static constexpr const char* name = "modules";
  static constexpr auto columns = std::tuple{
      member("module_id", &ModuleInfo::id),
      // A root's parent (-1, or any negative id) is NULL.
      Mapped<ModuleInfo, std::optional<int32_t>>{
          "parent_id",
          [](const ModuleInfo& m) {
            return m.parent_id >= 0 ? std::optional(m.parent_id) : std::nullopt;
          },
          [](ModuleInfo& m, std::optional<int32_t> v) { m.parent_id = v.value_or(-1); }},
      member("name", &ModuleInfo::name),
      member("type", &ModuleInfo::type),
      member("depth", &ModuleInfo::depth),
      member("n_params", &ModuleInfo::n_params),
      member("activation_bytes", &ModuleInfo::activation_bytes),
  };
};

template <>
struct Table<LayerStat> {
  static constexpr const char* name = "layer_stats";
  static constexpr auto columns = std::tuple{
      member("rank", &LayerStat::rank),
      member("module_id", &LayerStat::module_id),
      member("step", &LayerStat::step),
      member("fwd_ns", &LayerStat::fwd_ns),
      member("bwd_ns", &LayerStat::bwd_ns),
      member("fwd_flops", &LayerStat::fwd_flops),
      member("bwd_flops", &LayerStat::bwd_flops),
      member("fwd_macs", &LayerStat::fwd_macs),
      member("bwd_macs", &LayerStat::bwd_macs),
      member("calls", &LayerStat::calls),
      member("host_fwd_ns", &LayerStat::host_fwd_ns),
      member("host_bwd_ns", &LayerStat::host_bwd_ns),
      member("recompute_ns", &LayerStat::recompute_ns),
      member("recompute_flops", &LayerStat::recompute_flops),
      member("host_recompute_ns", &LayerStat::host_recompute_ns),
  };
};

template <>
struct Table<CommStatRow> {
  static constexpr const char* name = "comm_stats";
  static constexpr auto columns = std::tuple{
      member("rank", &CommStatRow::rank),
      member("op", &CommStatRow::op),
      member("bytes", &CommStatRow::bytes),
      member("count", &CommStatRow::count),
      member("total_ns", &CommStatRow::total_ns),
      member("min_ns", &CommStatRow::min_ns),
      member("max_ns", &CommStatRow::max_ns),
      member("algbw_gbps", &CommStatRow::algbw_gbps),
      member("busbw_gbps", &CommStatRow::busbw_gbps),
      member("link", &CommStatRow::link),
      member("\"group\"", &CommStatRow::group),  // an SQL keyword: quoted
  };
};

template <>
struct Table<MemoryRow> {
  static constexpr const char* name = "memory";
  static constexpr auto columns = std::tuple{
      member("rank", &MemoryRow::rank),
      member("category", &MemoryRow::category),
      member("current_bytes", &MemoryRow::current_bytes),
      member("peak_bytes", &MemoryRow::peak_bytes),
      member("predicted_bytes", &MemoryRow::predicted_bytes),
  };
};

// The exclusive combinations by name (idle is exclusive_ns[0]); the span, the
// exposed communication and idle's copy follow from the others.
template <>
struct Table<GpuRankTimeline> {
  using T = GpuRankTimeline;
  static constexpr const char* name = "gpu_timeline";
  static constexpr auto columns = std::tuple{
      member("rank", &T::rank),
      member("first_start_ns", &T::first_start_ns),
      member("last_end_ns", &T::last_end_ns),
      member("idle_ns", &T::idle_ns),
      member("compute_ns", &T::compute_ns),
      member("non_compute_ns", &T::non_compute_ns),
      member("comm_ns", &T::comm_ns),
      member("memory_ns", &T::memory_ns),
      member("comm_overlap_ns", &T::comm_overlap_ns),
      element("computation_only_ns", &T::exclusive_ns, 1),
      element("communication_only_ns", &T::exclusive_ns, 2),
      element("computation_communication_ns", &T::exclusive_ns, 3),
      element("memory_only_ns", &T::exclusive_ns, 4),
      element("computation_memory_ns", &T::exclusive_ns, 5),
      element("communication_memory_ns", &T::exclusive_ns, 6),
      element("all_three_ns", &T::exclusive_ns, 7),
      member("computation_kernels", &T::computation_kernels),
      member("communication_kernels", &T::communication_kernels),
      member("memory_records", &T::memory_records),
  };
  static void derive(T& t) {
    t.span_ns = t.last_end_ns - t.first_start_ns;
    t.exposed_comm_ns = t.comm_ns - t.comm_overlap_ns;
    t.exclusive_ns[0] = t.idle_ns;
  }
};

// Without name_id: a reference, to the names sent beside the events (rank rows)
// or to the store's event_names table, which each medium resolves its own way.
template <>
struct Table<Event> {
  static constexpr const char* name = "events";
  static constexpr auto columns = std::tuple{
      member("start_ns", &Event::start_ns), member("dur_ns", &Event::dur_ns),
      member("bytes", &Event::bytes),       member("flops", &Event::flops),
      member("step", &Event::step),         member("module_id", &Event::module_id),
      member("rank", &Event::rank),         member("lane", &Event::lane),
      member("category", &Event::category), member("scope", &Event::scope),
  };
};

}  // namespace hybrid::profiler::columns
