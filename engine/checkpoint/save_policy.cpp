#include "engine/checkpoint/save_policy.h"

#include <fmt/format.h>

namespace hybrid::engine {

SavePolicy::SavePolicy(const CheckpointConfig& cfg, const std::string& dir,
                       int64_t optimizer_interval)
    : dir_(dir.empty() ? cfg.dir : dir),
      interval_(cfg.interval),
      optimizer_interval_(optimizer_interval > 0 ? optimizer_interval : cfg.optimizer_interval),
      keep_last_(cfg.keep_last) {}

SavePolicy::Kind SavePolicy::at_step(int64_t step) const {
  if (!enabled() || step <= 0) return Kind::none;
  if (interval_ > 0 && step % interval_ == 0) return Kind::full;
  if (optimizer_interval_ > 0 && step % optimizer_interval_ == 0) return Kind::optimizer;
  return Kind::none;
}

std::string SavePolicy::tag(int64_t step) { return fmt::format("step{:06d}", step); }

std::string SavePolicy::warning() const {
  if (enabled() || (interval_ == 0 && optimizer_interval_ == 0 && keep_last_ == 0)) return "";
  return "hybrid.checkpoint: intervals given but no checkpoint directory (--save DIR or "
         "hybrid.checkpoint.dir): no checkpoint is saved";
}

}  // namespace hybrid::engine
