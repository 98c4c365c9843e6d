#include "engine/checkpoint/whole_model.h"

#include "engine/checkpoint/checkpoint.h"
#include "engine/model/registry.h"
#include "engine/parallel/tensor_shards.h"

namespace hybrid::engine {

SavedLayout saved_layout(const nlohmann::json& meta) {
  const int stages = meta.value("pipeline_stages", 1);
  return {stages, stages > 1 ? meta.value("pipeline_partition", "parameters") : std::string(),
          meta.value("tensor_parallel", 1)};
}

nlohmann::json partitions_of(const nlohmann::json& meta, int pp, int tp) {
  nlohmann::json mine = meta;
  mine["partitions"] = nlohmann::json::array();
  for (const auto& p : meta.at("partitions"))
    if (p.value("pp", 0) == pp && p.value("tp", 0) == tp) mine["partitions"].push_back(p);
  return mine;
}

std::vector<float> read_whole_model(const std::string& dir, const std::string& tag,
                                    const nlohmann::json& meta, const ModelConfig& model,
                                    int padded_vocab, int state_floats) {
  const SavedLayout layout = saved_layout(meta);
  const int planes = 1 + state_floats;
  std::vector<float> whole;
  for (int s = 0; s < layout.pipeline_stages; ++s)
    for (int t = 0; t < layout.tensor_parallel; ++t) {
      // What that rank held.
      const auto saved = make_model(model, padded_vocab, {layout.tensor_parallel, t});
      if (layout.pipeline_stages > 1)
        saved->set_pipeline_stage(s, layout.pipeline_stages, layout.partition);
      ModuleTree tree(*saved);
      const int64_t n = tree.param_count(), all = tree.full_param_count();
      if (whole.empty()) whole.assign(size_t(all) * size_t(planes), 0.0f);
      std::vector<float> pieces(size_t(n) * size_t(planes));
      read_checkpoint_range(dir, tag, partitions_of(meta, s, t), FlatRange{0, n}, state_floats,
                            pieces.data(), state_floats ? pieces.data() + n : nullptr);
      for (int k = 0; k < planes; ++k)
        unshard_flat(tree, pieces.data() + size_t(k) * size_t(n),
                     whole.data() + size_t(k) * size_t(all), t);
    }
  return whole;
}

}  // namespace hybrid::engine
