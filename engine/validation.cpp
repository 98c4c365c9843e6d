#include "engine/validation.h"

#include <fmt/format.h>

#include "engine/engine.h"

namespace hybrid {

using namespace engine;

Validation::Validation(const Config& cfg, Engine& engine, TokenDataset val)
    : engine_(engine), every_(cfg.data.val_every), batches_(cfg.data.val_batches) {
  if (every_ == 0) return;
  // The batches of step 0 with val_batches micro-steps: rank r's micro-batch k
  // holds samples (k·W + r)·b .. (k·W + r)·b + b − 1, disjoint over the ranks.
  loader_.emplace(std::move(val),
                  BatchShape{cfg.train_micro_batch_size_per_gpu, cfg.seq_len(), batches_,
                             engine.data_parallel_size(), engine.data_parallel_rank()});
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * size_t(cfg.seq_len());
  inputs_.resize(n);
  targets_.resize(n);
}

bool Validation::due(int64_t step, bool last) const {
  return every_ > 0 && (last || step % every_ == 0);
}

double Validation::run() {
  double sum = 0.0;
  for (int k = 0; k < batches_; ++k) {
    loader_->fill(0, k, inputs_.data(), targets_.data());
    sum += engine_.evaluate(inputs_.data(), targets_.data());
  }
  return engine_.mean_over_ranks(sum / batches_);
}

void Validation::after_step(int64_t step, bool last, TrainSummary& out,
                            const std::function<void(const std::string&)>& say) {
  if (!due(step, last)) return;
  const double loss = run();
  say(fmt::format("step {:>5} | val loss {:.4f}", step, loss));
  out.val_losses.push_back({{"step", step}, {"loss", loss}});
}

}  // namespace hybrid
