#include "engine/validation.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/data/data_file_error.h"
#include "engine/engine.h"

namespace hybrid {

using namespace engine;

Validation::Validation(const Config& cfg, Engine& engine, TokenDataset val)
    : engine_(engine), every_(cfg.data.val_every), batches_(cfg.data.val_batches) {
  if (every_ == 0) return;
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * size_t(cfg.seq_len());
  inputs_.resize(n);
  targets_.resize(n);
  if (cfg.data.documents()) {
    open_documents(cfg, std::move(val));
    return;
  }
  // The batches of step 0 with val_batches micro-steps: rank r's micro-batch k
  // holds samples (k·W + r)·b .. (k·W + r)·b + b − 1, disjoint over the ranks.
  loader_.emplace(std::move(val),
                  BatchShape{cfg.train_micro_batch_size_per_gpu, cfg.seq_len(), batches_,
                             engine.data_parallel_size(), engine.data_parallel_rank()});
}

// Epoch 0 of the stream in its own order, rows filled (no token budget): its
// micro-batches are shared out to the ranks one by one.
void Validation::open_documents(const Config& cfg, TokenDataset val) {
  DocumentLoaderOptions o;
  o.micro_batch = cfg.train_micro_batch_size_per_gpu;
  o.seq_len = cfg.seq_len();
  if (cfg.data.separator >= 0) o.separator = uint32_t(cfg.data.separator);
  o.shuffle = false;
  documents_.emplace(std::move(val), o);
  positions_.resize(inputs_.size());
  const int64_t ranks = engine_.data_parallel_size();
  const int64_t each = documents_->plan(0).micro_batches() / ranks;
  if (each == 0)
    throw DataFileError(fmt::format(
        "{}: {} micro-batches of validation documents, fewer than the {} data-parallel ranks",
        documents_->dataset().name(), documents_->plan(0).micro_batches(), ranks));
  batches_ = int(std::min<int64_t>(batches_, each));
}

void Validation::fill(int k) {
  if (loader_) {
    loader_->fill(0, k, inputs_.data(), targets_.data());
    return;
  }
  const int64_t m = int64_t(k) * engine_.data_parallel_size() + engine_.data_parallel_rank();
  const EpochPlan& plan = documents_->plan(0);
  pack_micro_batch(documents_->dataset(), plan.micro_batch(m), documents_->limits(),
                   documents_->separator(), {inputs_.data(), targets_.data(), positions_.data()});
}

bool Validation::due(int64_t step, bool last) const {
  return every_ > 0 && (last || step % every_ == 0);
}

double Validation::run() {
  double sum = 0.0;
  for (int k = 0; k < batches_; ++k) {
    fill(k);
    sum +=
        engine_.evaluate(inputs_.data(), targets_.data(), documents_ ? positions_.data() : nullptr);
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
