// When hybrid-train saves checkpoints (hybrid.checkpoint, --save, --save-every)
// and which old ones it deletes. Two kinds, each on its own interval:
//   optimizer-state checkpoints — the resume state (fp32 master weights and
//     optimizer state per rank, meta.json): every optimizer_interval steps;
//   full checkpoints — the same plus model.bin, the consolidated fp32 weights:
//     every interval steps.
// A step on both intervals saves one full checkpoint. keep_last keeps the
// newest k tags of each kind that the policy wrote (tags "step<NNNNNN>").
#pragma once

#include <cstdint>
#include <string>

#include "engine/config/config.h"

namespace hybrid::engine {

class SavePolicy {
 public:
  // dir / optimizer_interval: the command line's --save and --save-every, which
  // take precedence over hybrid.checkpoint.dir / optimizer_interval when given
  // (empty / 0: not given).
  SavePolicy(const CheckpointConfig& cfg, const std::string& dir, int64_t optimizer_interval);

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  int64_t keep_last() const { return keep_last_; }

  enum class Kind { none, optimizer, full };
  // What to save after global step `step` (1-based) of the loop.
  Kind at_step(int64_t step) const;
  // The end of a run saves an optimizer-state checkpoint unless `step` saved one.
  Kind at_end(int64_t step) const {
    return at_step(step) == Kind::none ? Kind::optimizer : Kind::none;
  }

  static std::string tag(int64_t step);                       // "step000120"
  static const char* managed_tags() { return "step[0-9]+"; }  // what keep_last may delete
  static const char* kind_name(Kind k) { return k == Kind::full ? "full" : "optimizer"; }

  // A line for the log when intervals are set but nothing will be saved (no dir); else "".
  std::string warning() const;

 private:
  std::string dir_;
  int64_t interval_ = 0, optimizer_interval_ = 0, keep_last_ = 0;
};

}  // namespace hybrid::engine
