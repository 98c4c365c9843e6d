// Engine::save_checkpoint / load_checkpoint: what a resume needs, and nothing
// that can be derived (16-bit parameters come from the master weights; the data
// position and the LR come from the step counters).
#include <fmt/format.h>

#include <algorithm>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/whole_model.h"
#include "engine/engine.h"
#include "engine/parallel/tensor_shards.h"

namespace hybrid {

using namespace engine;

namespace {
constexpr int kMetaVersion = 1;
}  // namespace

// The files tile each (stage, tensor-parallel rank)'s flat space once: ZeRO
// stage 0 has one copy (the first data-parallel rank's), 1-3 one shard per
// data-parallel rank. "pp" and "tp" name whose space a partition is in.
nlohmann::json Engine::saved_partitions() const {
  nlohmann::json partitions = nlohmann::json::array();
  for (int r = 0; r < world_size(); ++r)
    if (const FlatRange s = saved_range(r); !s.empty()) {
      partitions.push_back({{"rank", r}, {"begin", s.begin}, {"end", s.end}});
      if (tensor_parallel_size() > 1) partitions.back()["tp"] = topology_->coords(r).tp;
      if (pipeline_stages() > 1) partitions.back()["pp"] = topology_->coords(r).pp;
    }
  return partitions;
}

CheckpointOwner Engine::checkpoint_owner() const { return {model_identity(cfg_), lineage_}; }

std::string Engine::save_checkpoint(const std::string& dir, const std::string& tag_or_default,
                                    const CheckpointSaveOptions& options) {
  if (micro_step_ != 0)
    throw CheckpointError("checkpoint: save only at an accumulation boundary (after step())");
  const std::string tag =
      tag_or_default.empty() ? fmt::format("global_step{}", global_step_) : tag_or_default;
  const int tp = tensor_parallel_size();
  nlohmann::json meta = {
      {"format", "hybrid-checkpoint"},
      {"version", kMetaVersion},
      {"tag", tag},
      {"kind", options.full ? "full" : "optimizer"},
      {"global_step", global_step_},
      {"applied_steps", applied_steps_},
      {"skipped_steps", skipped_steps_},
      {"loss_scaler", scaler_.state()},
      {"data_position",
       {{"step", global_step_}, {"samples", global_step_ * cfg_.train_batch_size}}},
      {"rng", {{"seed", cfg_.seed}}},
      {"world_size", world_size()},
      {"pipeline_stages", pipeline_stages()},
      {"pipeline_partition", cfg_.parallel.partition},
      {"tensor_parallel", tp},
      {"zero_stage", cfg_.zero.stage},
      {"dtype", std::string(kernels::dtype_name(cfg_.param_dtype()))},
      {"param_count", tree_->full_param_count()},  // the whole model's
      {"optimizer", optimizer_->name()},
      {"state_floats", optimizer_->state_floats_per_param()},
      {"model", model_identity(cfg_)},
      {"lineage", lineage_},
      {"partitions", saved_partitions()},
  };

  PartitionData mine;
  const FlatRange range = saved_range(rank());
  const bool writes = !range.empty();
  if (writes) {
    const int sf = optimizer_->state_floats_per_param();
    const auto cut = size_t(range.begin - zero_->optimizer_range().begin);
    const auto master = zero_->master_to_host();
    const auto state = zero_->state_to_host();
    mine.range = range;
    mine.state_floats = sf;
    const size_t n = size_t(range.size()), all = master.size();
    mine.master.assign(master.begin() + ptrdiff_t(cut), master.begin() + ptrdiff_t(cut + n));
    for (int k = 0; k < sf; ++k) {  // state is planar: each kind over the whole range
      const auto from = state.begin() + ptrdiff_t(size_t(k) * all + cut);
      mine.state.insert(mine.state.end(), from, from + ptrdiff_t(n));
    }
  }
  CheckpointWriteOptions w;
  w.save_latest = options.save_latest;
  w.before_publish = options.before_publish;
  std::vector<float> flat;
  if (options.full) {
    flat = gather_parameters();  // collective
    w.extra_files = [this, &flat](const std::string& root) {
      model_->write_weights(*tree_, flat, model_->full_checkpoint_files(root));
    };
    const WeightFiles files = model_->full_checkpoint_files("");  // "/<name>": the name in root
    meta["model_file"] = (files.llmc_file.empty() ? files.hf_dir : files.llmc_file).substr(1);
  }
  write_checkpoint(dir, tag, *host_comm_, meta, writes ? &mine : nullptr, w);
  log(fmt::format("saved {} checkpoint {}/{} (step {})", options.full ? "full" : "optimizer-state",
                  dir, tag, global_step_));
  return tag;
}

std::string Engine::load_checkpoint(const std::string& dir, const std::string& want_tag) {
  const std::string tag = resolve_checkpoint_tag(dir, want_tag);
  const auto meta = read_checkpoint_meta(dir, tag);
  const std::string where = dir + "/" + tag;
  check_same_model(meta, where);
  const int sf = optimizer_->state_floats_per_param();
  if (meta.at("state_floats").get<int>() != sf)
    throw CheckpointError(
        fmt::format("checkpoint {}: saved with optimizer {} ({} state floats per parameter), "
                    "this run uses {} ({})",
                    where, meta.at("optimizer").get<std::string>(),
                    meta.at("state_floats").get<int>(), optimizer_->name(), sf));

  // Every rank validates what it reads; a failure anywhere stops all ranks.
  const FlatRange range = zero_->optimizer_range();
  std::vector<float> master(size_t(range.size())), state(size_t(range.size()) * size_t(sf));
  float failed = 0.0f;
  std::string error;
  try {
    read_saved_state(dir, tag, meta, range, master.data(), state.data());
  } catch (const std::exception& e) {
    failed = 1.0f;
    error = e.what();
  }
  host_comm_->all_reduce(&failed, 1, kernels::DType::f32, comm::ReduceOp::max);  // a host value
  if (failed > 0.0f)
    throw CheckpointError(
        error.empty()
            ? fmt::format("checkpoint {}: another rank could not read its partition", where)
            : error);

  zero_->load_from_host(master.data(), state.data());
  zero_->zero_grads();
  global_step_ = meta.at("global_step").get<int64_t>();
  applied_steps_ = meta.at("applied_steps").get<int64_t>();
  skipped_steps_ = meta.at("skipped_steps").get<int64_t>();
  micro_step_ = 0;
  // A resumed run continues the checkpoint's lineage: keep_last rotates its tags.
  if (const auto it = meta.find("lineage"); it != meta.end()) lineage_ = it->get<std::string>();
  if (cfg_.fp16.enabled && meta.at("loss_scaler").value("dynamic", false) == scaler_.dynamic())
    scaler_.load_state(meta.at("loss_scaler"));
  log(fmt::format("loaded checkpoint {} (step {}{})", where, global_step_,
                  meta.at("world_size").get<int>() != world_size()
                      ? fmt::format(", saved with {} ranks, now {}",
                                    meta.at("world_size").get<int>(), world_size())
                      : std::string()));
  return tag;
}

// Every field of the model configuration must agree (engine/checkpoint/
// checkpoint_owner.h): the parameter count alone would let another n_head or
// vocab_size (within the same padding) resume silently. A field the checkpoint
// predates is not compared, and the parameter count still is.
void Engine::check_same_model(const nlohmann::json& meta, const std::string& where) const {
  const auto mine = model_identity(cfg_);
  if (const std::string why = model_difference(meta.at("model"), mine); !why.empty())
    throw CheckpointError(fmt::format("checkpoint {} was saved for {}", where, why));
  if (meta.at("param_count").get<int64_t>() != tree_->full_param_count())
    throw CheckpointError(fmt::format("checkpoint {} holds {} parameters, this model has {}", where,
                                      meta.at("param_count").get<int64_t>(),
                                      tree_->full_param_count()));
  for (const auto& key : fields_not_saved(meta.at("model"), mine))
    log(fmt::format("checkpoint {} predates {}: not compared", where, key));
}

// The same layout reads this rank's flat space straight from the files its
// (stage, tp rank) wrote; another one puts the saved spaces together into
// whole tensors and cuts this rank's.
void Engine::read_saved_state(const std::string& dir, const std::string& tag,
                              const nlohmann::json& meta, FlatRange range, float* master,
                              float* state) {
  const int sf = optimizer_->state_floats_per_param();
  const SavedLayout mine{pipeline_stages(),
                         pipeline_stages() > 1 ? cfg_.parallel.partition : std::string(),
                         tensor_parallel_size()};
  if (saved_layout(meta) == mine)
    return read_checkpoint_range(dir, tag,
                                 partitions_of(meta, pipeline_stage(), tensor_parallel_rank()),
                                 range, sf, master, state);
  const auto whole = read_whole_model(dir, tag, meta, cfg_.model, cfg_.padded_vocab(), sf);
  const size_t all = size_t(tree_->full_param_count()), n = size_t(range.size());
  for (int k = 0; k <= sf; ++k) {
    const auto pieces = shard_flat(*tree_, whole.data() + size_t(k) * all);
    float* out = k == 0 ? master : state + size_t(k - 1) * n;  // state is planar
    // The range may run past the parameters into ZeRO's padding: zeros there.
    const size_t held = std::min(n, pieces.size() - std::min(pieces.size(), size_t(range.begin)));
    std::copy_n(pieces.begin() + ptrdiff_t(std::min(pieces.size(), size_t(range.begin))), held,
                out);
    std::fill(out + held, out + n, 0.0f);
  }
}

}  // namespace hybrid
