// What each training step reads, as the engine's micro-batches: fixed windows
// of the token stream (engine/data/data_loader.h), or whole documents packed
// into rows (engine/data/document_loader.h: hybrid.data.packing, dynamic
// batching), with the step's counts (real tokens, documents) and its learning
// rate factor.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/data/data_loader.h"
#include "engine/data/document_loader.h"
#include "engine/data/token_dataset.h"
#include "engine/runtime/micro_batch.h"

namespace hybrid::engine {

class StepData {
 public:
  // This data-parallel rank's share of `train`. Throws DataFileError for data
  // that holds no step, std::invalid_argument for bad dynamic batching options.
  StepData(const Config& cfg, TokenDataset train, int dp_size, int dp_rank);

  // Global step `step`'s (0-based) micro-batches on this rank. Documents: the
  // loader's position moves on one step.
  const std::vector<MicroBatch>& fill(int64_t step);

  // The last filled step, over every rank: tokens with a target, documents,
  // padding (fixed windows: B·T·gas·W tokens, no padding), its learning-rate
  // factor (dynamic batching: the step's batch size against train_batch_size).
  const BatchCounts& counts() const { return counts_; }
  double lr_scale() const { return lr_scale_; }
  // Every token of a step, padding included: B·T·gas·W.
  double step_capacity() const;

  bool documents() const { return documents_ != nullptr; }
  // Documents: where the loader stands after the last filled step (what a
  // checkpoint saves); null otherwise.
  nlohmann::json position() const;
  // Resumes at global step `step` (documents): from a checkpoint's saved
  // position, else (null: a checkpoint without one) the position that many
  // steps from the start. Throws std::out_of_range for a position this data
  // and these batch options do not have.
  void resume(int64_t step, const nlohmann::json& saved);
  // "documents: N (separator S), ..." for the run's first lines; "" for windows.
  std::string describe();

 private:
  const Config& cfg_;
  std::unique_ptr<DataLoader> windows_;
  std::unique_ptr<DocumentLoader> documents_;
  DataPosition position_;
  std::vector<int32_t> inputs_, targets_, positions_;  // gas micro-batches, one after another
  std::vector<MicroBatchArrays> arrays_;               // micro-batch k's slices, to fill
  std::vector<MicroBatch> batches_;                    // the same, as the engine reads them
  BatchCounts counts_;
  double lr_scale_ = 1.0;
};

}  // namespace hybrid::engine
