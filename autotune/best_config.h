// The sweep's answer as a file: the best trial's complete ds_config.json, which
// hybrid-train runs as is — the autotuning block removed, the tuned values set,
// and the batch triad written out consistently (train_batch_size =
// micro-batch × accumulation × ranks) for the world size it was tuned on.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace hybrid::autotune {

// The config to write: validated with parse_config(…, world_size); throws
// engine::ConfigError (naming the key) when it does not parse.
nlohmann::json best_config_json(const nlohmann::json& trial_config, int world_size);

// Writes it atomically (temporary file, then rename); creates the directory.
// before_commit runs once the temporary file is complete, before the rename
// (the kill-storm tests pause there).
void write_best_config(const std::string& path, const nlohmann::json& trial_config, int world_size,
                       const std::function<void()>& before_commit = {});

}  // namespace hybrid::autotune
