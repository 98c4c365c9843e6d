// hybrid.data.val_every (docs/config.md): the validation loss during training,
// as llm.c measures it: every val_every optimizer steps and after the run's
// last, the mean token loss over the same val_batches micro-batches from the
// start of the validation stream, each data-parallel rank its own disjoint ones
// (the stateless loader's samples of step 0, engine/data/data_loader.h),
// averaged over the ranks. Documents as units (hybrid.data.packing, dynamic
// batching): the micro-batches are the validation documents packed in stream
// order as training packs its own (rows of whole documents, positions per
// document, padding without loss), rank r's the k·W + r-th, as many as the
// stream holds up to val_batches. The forward is Engine::evaluate's, which
// leaves training as it was.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/data/data_loader.h"
#include "engine/data/document_loader.h"
#include "engine/train_summary.h"

namespace hybrid {

class Engine;

class Validation {
 public:
  // val: the validation stream (unused when val_every is 0). Throws
  // DataFileError when it holds fewer than seq_len + 1 tokens (documents: fewer
  // micro-batches than data-parallel ranks).
  Validation(const engine::Config& cfg, Engine& engine, engine::TokenDataset val);

  // Whether the loss is measured after global step `step` (`last`: the run's last).
  bool due(int64_t step, bool last) const;
  // Collective (every rank calls it): the mean token loss over the batches and ranks.
  double run();
  // When due: runs, says "step N | val loss X" and appends {"step", "loss"} to
  // the summary's val_losses.
  void after_step(int64_t step, bool last, TrainSummary& out,
                  const std::function<void(const std::string&)>& say);

 private:
  Engine& engine_;
  int64_t every_ = 0;
  int batches_ = 0;
  std::optional<engine::DataLoader> loader_;
  std::optional<engine::DocumentLoader> documents_;
  std::vector<int32_t> inputs_, targets_, positions_;  // one micro-batch

  void open_documents(const engine::Config& cfg, engine::TokenDataset val);
  // Micro-batch k of this rank into inputs_, targets_ (and positions_).
  void fill(int k);
};

}  // namespace hybrid
