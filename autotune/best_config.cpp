#include "autotune/best_config.h"

#include "autotune/candidate.h"
#include "base/atomic_file.h"
#include "engine/config/config.h"

namespace hybrid::autotune {

nlohmann::json best_config_json(const nlohmann::json& trial_config, int world_size) {
  nlohmann::json j = without_autotuning(trial_config);
  const engine::Config c = engine::parse_config(j, world_size);
  j["train_micro_batch_size_per_gpu"] = c.train_micro_batch_size_per_gpu;
  j["gradient_accumulation_steps"] = c.gradient_accumulation_steps;
  j["train_batch_size"] = c.train_batch_size;
  engine::parse_config(j, world_size);  // the written triad must hold
  return j;
}

void write_best_config(const std::string& path, const nlohmann::json& trial_config, int world_size,
                       const std::function<void()>& before_commit) {
  const std::string text = best_config_json(trial_config, world_size).dump(2) + "\n";
  // Creates missing folders; a crash leaves the old file or the whole new one.
  base::AtomicFileWriter w(path);
  w.write(text);
  if (before_commit) before_commit();
  w.commit();
}

}  // namespace hybrid::autotune
