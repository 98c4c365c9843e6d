// Checkpoints: what a resume needs, and nothing that can be derived (16-bit
// parameters come from the master weights; the data position and the LR come
// from the step counters).
#include "engine/runtime/checkpoint_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/whole_model.h"
#include "engine/parallel/tensor_shards.h"

namespace hybrid::engine {

namespace {
constexpr int kMetaVersion = 1;
}  // namespace

CheckpointIO::CheckpointIO(const Config& cfg, DeviceRuntime& runtime, CausalLM& model,
                           const ModuleTree& tree, const Optimizer& optimizer, ZeroRuntime& zero,
                           const PipelineRunner* pipeline)
    : cfg_(cfg),
      runtime_(runtime),
      model_(model),
      tree_(tree),
      optimizer_(optimizer),
      zero_(zero),
      pipeline_(pipeline) {}

FlatRange CheckpointIO::saved_range(int r) const {
  const Topology* topo = runtime_.topology();
  const TopologyCoords c = topo ? topo->coords(r) : TopologyCoords{0, r, 0};
  // Stages hold flat spaces of their own sizes, each partitioned over dp.
  const Partition part = pipeline_ ? Partition(pipeline_->stage_param_count(c.pp), topo->dp(), c.dp)
                                   : zero_.partition();
  return cfg_.zero.stage == 0 ? (c.dp == 0 ? FlatRange{0, part.padded()} : FlatRange{})
                              : part.shard(c.dp);
}

// The files tile each (stage, tensor-parallel rank)'s flat space once: ZeRO
// stage 0 has one copy (the first data-parallel rank's), 1-3 one shard per
// data-parallel rank. "pp" and "tp" name whose space a partition is in.
nlohmann::json CheckpointIO::saved_partitions() const {
  nlohmann::json partitions = nlohmann::json::array();
  const Topology* topo = runtime_.topology();
  for (int r = 0; r < runtime_.world_size(); ++r)
    if (const FlatRange s = saved_range(r); !s.empty()) {
      partitions.push_back({{"rank", r}, {"begin", s.begin}, {"end", s.end}});
      if (topo && topo->tp() > 1) partitions.back()["tp"] = topo->coords(r).tp;
      if (topo && topo->pp() > 1) partitions.back()["pp"] = topo->coords(r).pp;
    }
  return partitions;
}

nlohmann::json CheckpointIO::meta(const std::string& tag, bool full,
                                  const TrainingProgress& progress,
                                  const LossScaler& scaler) const {
  const int64_t step = progress.global_step;
  nlohmann::json data = {{"step", step}, {"samples", step * cfg_.train_batch_size}};
  if (!progress.data_position.is_null()) data["documents"] = progress.data_position;
  nlohmann::json m = {
      {"format", "hybrid-checkpoint"},
      {"version", kMetaVersion},
      {"tag", tag},
      {"kind", full ? "full" : "optimizer"},
      {"global_step", step},
      {"applied_steps", progress.applied_steps},
      {"skipped_steps", progress.skipped_steps},
      {"loss_scaler", scaler.state()},
      {"data_position", data},
      {"rng", {{"seed", cfg_.seed}}},
      {"world_size", runtime_.world_size()},
      {"pipeline_stages", runtime_.size(ParallelAxis::pp)},
      {"pipeline_partition", cfg_.parallel.partition},
      {"tensor_parallel", runtime_.size(ParallelAxis::tp)},
      {"zero_stage", cfg_.zero.stage},
      {"dtype", std::string(kernels::dtype_name(cfg_.param_dtype()))},
      {"param_count", tree_.full_param_count()},  // the whole model's
      {"optimizer", optimizer_.name()},
      {"state_floats", optimizer_.state_floats_per_param()},
      {"model", model_identity(cfg_)},
      {"lineage", progress.lineage},
      {"partitions", saved_partitions()},
  };
  if (auto scalars = optimizer_.scalar_state(); !scalars.is_null())
    m["optimizer_scalars"] = std::move(scalars);
  return m;
}

PartitionData CheckpointIO::partition(FlatRange range) const {
  PartitionData mine;
  const int sf = optimizer_.state_floats_per_param();
  const auto cut = size_t(range.begin - zero_.optimizer_range().begin);
  const auto master = zero_.master_to_host();
  const auto state = zero_.state_to_host();
  mine.range = range;
  mine.state_floats = sf;
  const size_t n = size_t(range.size()), all = master.size();
  mine.master.assign(master.begin() + ptrdiff_t(cut), master.begin() + ptrdiff_t(cut + n));
  for (int k = 0; k < sf; ++k) {  // state is planar: each kind over the whole range
    const auto from = state.begin() + ptrdiff_t(size_t(k) * all + cut);
    mine.state.insert(mine.state.end(), from, from + ptrdiff_t(n));
  }
  return mine;
}

std::string CheckpointIO::save(const std::string& dir, const std::string& tag_or_default,
                               const CheckpointSaveOptions& options,
                               const TrainingProgress& progress, const LossScaler& scaler) {
  const std::string tag =
      tag_or_default.empty() ? fmt::format("global_step{}", progress.global_step) : tag_or_default;
  nlohmann::json meta = this->meta(tag, options.full, progress, scaler);
  const FlatRange range = saved_range(runtime_.rank());
  const bool writes = !range.empty();
  PartitionData mine;
  if (writes) mine = partition(range);
  CheckpointWriteOptions w;
  w.save_latest = options.save_latest;
  w.before_publish = options.before_publish;
  std::vector<float> flat;
  if (options.full) {
    flat = gather_parameters();  // collective
    w.extra_files = [this, &flat](const std::string& root) {
      model_.write_weights(tree_, flat, model_.full_checkpoint_files(root));
    };
    const WeightFiles files = model_.full_checkpoint_files("");
    const std::string path = files.llmc_file.empty() ? files.hf_dir : files.llmc_file;
    meta["model_file"] = std::filesystem::path(path).filename().string();  // in DIR/TAG
  }
  write_checkpoint(dir, tag, runtime_.host_comm(), meta, writes ? &mine : nullptr, w);
  runtime_.log(fmt::format("saved {} checkpoint {}/{} (step {})",
                           options.full ? "full" : "optimizer-state", dir, tag,
                           progress.global_step));
  return tag;
}

std::string CheckpointIO::load(const std::string& dir, const std::string& want_tag,
                               TrainingProgress& progress, LossScaler& scaler) {
  const std::string tag = resolve_checkpoint_tag(dir, want_tag);
  const auto meta = read_checkpoint_meta(dir, tag);
  const std::string where = dir + "/" + tag;
  check_same_model(meta, where);
  check_same_optimizer(meta, where);
  std::vector<float> master, state;
  read_all_ranks(dir, tag, meta, where, master, state);
  zero_.load_from_host(master.data(), state.data());
  zero_.zero_grads();
  progress.global_step = meta.at("global_step").get<int64_t>();
  progress.applied_steps = meta.at("applied_steps").get<int64_t>();
  progress.skipped_steps = meta.at("skipped_steps").get<int64_t>();
  // A resumed run continues the checkpoint's lineage: keep_last rotates its tags.
  if (const auto it = meta.find("lineage"); it != meta.end())
    progress.lineage = it->get<std::string>();
  progress.optimizer_scalars = meta.value("optimizer_scalars", nlohmann::json());
  progress.data_position = meta.contains("data_position")
                               ? meta.at("data_position").value("documents", nlohmann::json())
                               : nlohmann::json();
  if (cfg_.fp16.enabled && meta.at("loss_scaler").value("dynamic", false) == scaler.dynamic())
    scaler.load_state(meta.at("loss_scaler"));
  const int saved_world = meta.at("world_size").get<int>(), world = runtime_.world_size();
  runtime_.log(fmt::format("loaded checkpoint {} (step {}{})", where, progress.global_step,
                           saved_world != world
                               ? fmt::format(", saved with {} ranks, now {}", saved_world, world)
                               : std::string()));
  return tag;
}

// Every field of the model configuration must agree (engine/checkpoint/
// checkpoint_owner.h): the parameter count alone would let another n_head or
// vocab_size (within the same padding) resume silently. A field the checkpoint
// predates is not compared, and the parameter count still is.
void CheckpointIO::check_same_model(const nlohmann::json& meta, const std::string& where) const {
  const auto mine = model_identity(cfg_);
  if (const std::string why = model_difference(meta.at("model"), mine); !why.empty())
    throw CheckpointError(fmt::format("checkpoint {} was saved for {}", where, why));
  if (meta.at("param_count").get<int64_t>() != tree_.full_param_count())
    throw CheckpointError(fmt::format("checkpoint {} holds {} parameters, this model has {}", where,
                                      meta.at("param_count").get<int64_t>(),
                                      tree_.full_param_count()));
  for (const auto& key : fields_not_saved(meta.at("model"), mine))
    runtime_.log(fmt::format("checkpoint {} predates {}: not compared", where, key));
}

void CheckpointIO::check_same_optimizer(const nlohmann::json& meta,
                                        const std::string& where) const {
  const int sf = optimizer_.state_floats_per_param();
  if (meta.at("state_floats").get<int>() != sf)
    throw CheckpointError(
        fmt::format("checkpoint {}: saved with optimizer {} ({} state floats per parameter), "
                    "this run uses {} ({})",
                    where, meta.at("optimizer").get<std::string>(),
                    meta.at("state_floats").get<int>(), optimizer_.name(), sf));
}

// Every rank validates what it reads; a failure anywhere stops all ranks.
void CheckpointIO::read_all_ranks(const std::string& dir, const std::string& tag,
                                  const nlohmann::json& meta, const std::string& where,
                                  std::vector<float>& master, std::vector<float>& state) {
  const FlatRange range = zero_.optimizer_range();
  const size_t sf = size_t(optimizer_.state_floats_per_param());
  master.assign(size_t(range.size()), 0.0f);
  state.assign(size_t(range.size()) * sf, 0.0f);
  float failed = 0.0f;
  std::string error;
  try {
    read_saved_state(dir, tag, meta, range, master.data(), state.data());
  } catch (const std::exception& e) {
    failed = 1.0f;
    error = e.what();
  }
  runtime_.host_comm().all_reduce(&failed, 1, kernels::DType::f32,
                                  comm::ReduceOp::max);  // a host value
  if (failed > 0.0f)
    throw CheckpointError(
        error.empty()
            ? fmt::format("checkpoint {}: another rank could not read its partition", where)
            : error);
}

// The same layout reads this rank's flat space straight from the files its
// (stage, tp rank) wrote; another one puts the saved spaces together into
// whole tensors and cuts this rank's.
void CheckpointIO::read_saved_state(const std::string& dir, const std::string& tag,
                                    const nlohmann::json& meta, FlatRange range, float* master,
                                    float* state) {
  const int sf = optimizer_.state_floats_per_param();
  const int stages = runtime_.size(ParallelAxis::pp);
  const SavedLayout mine{stages, stages > 1 ? cfg_.parallel.partition : std::string(),
                         runtime_.size(ParallelAxis::tp)};
  if (saved_layout(meta) == mine) {
    const TopologyCoords c = runtime_.coords();
    return read_checkpoint_range(dir, tag, partitions_of(meta, c.pp, c.tp), range, sf, master,
                                 state);
  }
  const auto whole = read_whole_model(dir, tag, meta, cfg_.model, cfg_.padded_vocab(), sf);
  const size_t all = size_t(tree_.full_param_count()), n = size_t(range.size());
  for (int k = 0; k <= sf; ++k) {
    const auto pieces = shard_flat(tree_, whole.data() + size_t(k) * all);
    float* out = k == 0 ? master : state + size_t(k - 1) * n;  // state is planar
    // The range may run past the parameters into ZeRO's padding: zeros there.
    const size_t held = std::min(n, pieces.size() - std::min(pieces.size(), size_t(range.begin)));
    std::copy_n(pieces.begin() + ptrdiff_t(std::min(pieces.size(), size_t(range.begin))), held,
                out);
    std::fill(out + held, out + n, 0.0f);
  }
}

// Each rank writes the pieces its tp group holds into the whole model; the
// stages' are summed, the tied embedding counted once (the first stage's). Host
// vectors: the host communicator's groups.
std::vector<float> CheckpointIO::gather_parameters() {
  std::vector<float> mine = zero_.full_master();
  const Topology* topo = runtime_.topology();
  if (!topo) return mine;
  const int tp = topo->tp();
  const size_t n = mine.size();
  std::vector<float> pieces(n * size_t(tp));
  runtime_.host_group(ParallelAxis::tp)
      .all_gather(mine.data(), pieces.data(), std::vector<size_t>(size_t(tp), n),
                  kernels::DType::f32);
  std::vector<float> whole(size_t(tree_.full_param_count()), 0.0f);
  for (int t = 0; t < tp; ++t) unshard_flat(tree_, pieces.data() + n * size_t(t), whole.data(), t);
  if (topo->pp() == 1) return whole;
  if (const ParamSpec* t = model_.tied_parameter(); t && !model_.first_stage())
    std::fill_n(whole.begin() + t->full_offset, t->full_numel(), 0.0f);
  runtime_.host_group(ParallelAxis::pp)
      .all_reduce(whole.data(), whole.size(), kernels::DType::f32, comm::ReduceOp::sum);
  return whole;
}

void CheckpointIO::set_parameters(const std::vector<float>& flat) {
  if (int64_t(flat.size()) != tree_.full_param_count())
    throw std::invalid_argument(fmt::format("set_parameters: expected {} values, got {}",
                                            tree_.full_param_count(), flat.size()));
  const std::vector<float> local = runtime_.topology() ? shard_flat(tree_, flat.data()) : flat;
  const FlatRange r = zero_.optimizer_range();
  std::vector<float> mine(size_t(r.size()), 0.0f);
  for (int64_t i = r.begin; i < std::min(r.end, int64_t(local.size())); ++i)
    mine[size_t(i - r.begin)] = local[size_t(i)];
  std::vector<float> state(size_t(r.size()) * size_t(optimizer_.state_floats_per_param()), 0.0f);
  zero_.load_from_host(mine.data(), state.data());
  zero_.zero_grads();
}

}  // namespace hybrid::engine
