#include "engine/step_data.h"

#include <fmt/format.h>

#include <stdexcept>

#include "base/units.h"

namespace hybrid::engine {

namespace {

DocumentLoaderOptions document_options(const Config& cfg, int dp_size, int dp_rank) {
  const DataConfig& d = cfg.data;
  DocumentLoaderOptions o;
  o.micro_batch = cfg.train_micro_batch_size_per_gpu;
  o.seq_len = cfg.seq_len();
  o.grad_accum = cfg.gradient_accumulation_steps;
  o.world_size = dp_size;
  o.rank = dp_rank;
  if (d.separator >= 0) o.separator = uint32_t(d.separator);
  o.seed = d.shuffle_seed.value_or(cfg.seed);
  o.shuffle = d.shuffle;
  o.dynamic = dynamic_batch_options(d.dynamic_batching, o.micro_batch, o.seq_len);
  return o;
}

}  // namespace

StepData::StepData(const Config& cfg, TokenDataset train, int dp_size, int dp_rank) : cfg_(cfg) {
  const size_t micro = size_t(cfg.train_micro_batch_size_per_gpu) * size_t(cfg.seq_len());
  const int gas = cfg.gradient_accumulation_steps;
  if (cfg.data.documents())
    documents_ =
        std::make_unique<DocumentLoader>(std::move(train), document_options(cfg, dp_size, dp_rank));
  else
    windows_ = std::make_unique<DataLoader>(
        std::move(train),
        BatchShape{cfg.train_micro_batch_size_per_gpu, cfg.seq_len(), gas, dp_size, dp_rank});
  inputs_.resize(micro * size_t(gas));
  targets_.resize(inputs_.size());
  if (documents_) positions_.resize(inputs_.size());
  for (int k = 0; k < gas; ++k) {
    const size_t at = micro * size_t(k);
    arrays_.push_back(
        {inputs_.data() + at, targets_.data() + at, documents_ ? positions_.data() + at : nullptr});
    batches_.push_back({arrays_.back().inputs, arrays_.back().targets, arrays_.back().positions});
  }
}

double StepData::step_capacity() const { return double(cfg_.train_batch_size) * cfg_.seq_len(); }

const std::vector<MicroBatch>& StepData::fill(int64_t step) {
  if (windows_) {
    for (int k = 0; k < cfg_.gradient_accumulation_steps; ++k)
      windows_->fill(step, k, arrays_[size_t(k)].inputs, arrays_[size_t(k)].targets);
    counts_ = {cfg_.train_batch_size, int64_t(step_capacity()), 0};
    return batches_;
  }
  counts_ = documents_->fill(position_, arrays_).global;
  const auto& dyn = cfg_.data.dynamic_batching;
  lr_scale_ = dyn.enabled
                  ? engine::lr_scale(dyn.lr_scaling, counts_.sequences, cfg_.train_batch_size)
                  : 1.0;
  position_ = documents_->next(position_);
  return batches_;
}

nlohmann::json StepData::position() const {
  return documents_ ? nlohmann::json(position_) : nlohmann::json();
}

void StepData::resume(int64_t step, const nlohmann::json& saved) {
  if (!documents_) return;
  position_ = saved.is_null() ? documents_->position_at(step) : saved.get<DataPosition>();
  try {
    documents_->check_position(position_);
  } catch (const std::out_of_range& e) {
    throw std::out_of_range(fmt::format(
        "resuming at step {}: the checkpoint's {} (other data, or other batch options?)", step,
        e.what()));
  }
}

std::string StepData::describe() {
  if (!documents_) return "";
  const auto& d = documents_->documents();
  const auto& dyn = cfg_.data.dynamic_batching;
  return fmt::format(
      "data: {} documents (separator token {}), {} order, {} steps in epoch 0{}",
      base::format_count(double(d.count())), d.separator(),
      cfg_.data.shuffle ? "shuffled" : "stream", documents_->steps_in_epoch(0),
      dyn.enabled ? fmt::format(" | dynamic batching: up to {} tokens a micro-batch, lr scaled {}",
                                documents_->limits().max_tokens, dyn.lr_scaling)
                  : std::string());
}

}  // namespace hybrid::engine
