#include "engine/checkpoint/whole_model.h"

#include "engine/checkpoint/checkpoint.h"
#include "engine/model/gpt2.h"
#include "engine/parallel/tensor_shards.h"

namespace hybrid::engine {

int checkpoint_tensor_parallel(const nlohmann::json& meta) {
  return meta.value("tensor_parallel", 1);
}

nlohmann::json partitions_of_tp(const nlohmann::json& meta, int tp) {
  nlohmann::json mine = meta;
  mine["partitions"] = nlohmann::json::array();
  for (const auto& p : meta.at("partitions"))
    if (p.value("tp", 0) == tp) mine["partitions"].push_back(p);
  return mine;
}

std::vector<float> read_whole_model(const std::string& dir, const std::string& tag,
                                    const nlohmann::json& meta, const ModelConfig& model,
                                    int padded_vocab, int state_floats) {
  const int saved_tp = checkpoint_tensor_parallel(meta);
  std::vector<float> whole;
  for (int t = 0; t < saved_tp; ++t) {
    GPT2 saved(model, padded_vocab, {saved_tp, t});  // the shapes rank t held
    ModuleTree tree(saved);
    const int64_t n = tree.param_count(), all = tree.full_param_count();
    if (t == 0) whole.assign(size_t(all) * size_t(1 + state_floats), 0.0f);
    std::vector<float> pieces(size_t(n) * size_t(1 + state_floats));
    read_checkpoint_range(dir, tag, partitions_of_tp(meta, t), FlatRange{0, n}, state_floats,
                          pieces.data(), state_floats ? pieces.data() + n : nullptr);
    for (int k = 0; k <= state_floats; ++k)
      unshard_flat(tree, pieces.data() + size_t(k) * size_t(n),
                   whole.data() + size_t(k) * size_t(all), t);
  }
  return whole;
}

}  // namespace hybrid::engine
