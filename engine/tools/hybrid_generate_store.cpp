// hybrid-generate --db: the run it records, as hybrid-train's run recorder
// does: created `running` (so a crash is found by mark-stale), described once
// the engine exists, its generation rows added, then finished ok, or
// config_error / failed with the error.
#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

#include "base/host.h"
#include "engine/tools/hybrid_generate.h"
#include "profiler/store/run_store.h"

namespace hybrid::generate_tool {

namespace {

// What the run was asked to do: its config_json.
nlohmann::json options_json(const Options& o, const engine::StoredModel& stored) {
  nlohmann::json j = {{"model", o.model},
                      {"format", stored.format},
                      {"dtype", o.dtype},
                      {"batch", o.batch},
                      {"max_new_tokens", o.gen.max_new_tokens},
                      {"temperature", o.gen.sampling.temperature},
                      {"top_k", o.gen.sampling.top_k},
                      {"top_p", o.gen.sampling.top_p},
                      {"seed", o.gen.sampling.seed}};
  if (o.bench)
    j["bench"] = {{"pp", o.bench_pp}, {"tg", o.bench_tg}, {"repetitions", o.repetitions}};
  return {{"hybrid-generate", j}, {"hybrid", {{"model", {{"type", stored.model.type}}}}}};
}

profiler::RunInfo run_info(const Options& o, const engine::StoredModel& stored, int batch) {
  profiler::RunInfo info;
  info.name =
      !o.run_name.empty() ? o.run_name : (o.bench ? "hybrid-generate --bench" : "hybrid-generate");
  info.config_json = options_json(o, stored).dump();
  info.host = base::host_name();
  info.dtype = o.dtype;
  info.micro_batch = batch;
  info.seq_len = stored.model.seq_len;
  info.hybrid_version = "0.1.0";
  return info;
}

}  // namespace

RunRecord::RunRecord(const Options& o, const engine::StoredModel& stored, int batch) {
  if (o.db.empty()) return;
  try {
    store_ = std::make_unique<profiler::RunStore>(o.db);
  } catch (const profiler::StoreError& e) {
    throw std::invalid_argument(fmt::format("--db {}: {}", o.db, e.what()));
  }
  run_id_ = store_->create_run(run_info(o, stored, batch));
}

RunRecord::~RunRecord() = default;

void RunRecord::describe(Engine& e) {
  if (!store_) return;
  auto info = store_->get_run(run_id_);
  info.device = e.backend().name();
  info.backend = e.backend().kind() == kernels::BackendKind::cuda ? "cuda" : "cpu";
  info.world_size = e.world_size();
  info.n_params = uint64_t(e.param_count());
  store_->update_run(info);
}

void RunRecord::add(const profiler::GenerationRow& row) {
  if (store_) store_->add_generation(run_id_, row);
}

void RunRecord::finish(const nlohmann::json& summary) {
  if (store_) store_->finish_run(run_id_, profiler::RunStatus::ok, {}, summary.dump());
}

void RunRecord::fail(bool bad_input, const std::string& error) {
  if (!store_) return;
  try {
    store_->finish_run(run_id_,
                       bad_input ? profiler::RunStatus::config_error : profiler::RunStatus::failed,
                       error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hybrid-generate: could not record the failure in %s: %s\n",
                 store_->path().c_str(), e.what());
  }
}

}  // namespace hybrid::generate_tool
