#include "engine/data/document_loader.h"

#include <fmt/format.h>

#include <stdexcept>

#include "engine/data/data_file_error.h"
#include "engine/data/data_loader.h"
#include "engine/data/document_order.h"

namespace hybrid::engine {

namespace {

void check_shape(const DocumentLoaderOptions& o) {
  check_batch_shape({o.micro_batch, o.seq_len, o.grad_accum, o.world_size, o.rank},
                    "document loader");
  validate_dynamic_batching(o.dynamic, o.micro_batch, o.seq_len);
}

}  // namespace

DocumentLoader::DocumentLoader(TokenDataset data, DocumentLoaderOptions options)
    : data_(std::move(data)), options_(options) {
  check_shape(options_);
  index_ = DocumentIndex(data_, choose_separator(data_, options_.separator));
  steps_in_epoch(0);  // refuses data too small for one step now, not at the first fill
}

PackingLimits DocumentLoader::limits() const {
  return packing_limits(options_.dynamic, options_.micro_batch, options_.seq_len);
}

int64_t DocumentLoader::micro_batches_per_step() const {
  return int64_t(options_.grad_accum) * options_.world_size;
}

const EpochPlan& DocumentLoader::plan(int64_t epoch) {
  if (!planned_ || plan_.epoch != epoch) {
    const int min_batch = options_.dynamic.enabled() ? options_.dynamic.min_batch : 1;
    plan_ =
        plan_epoch(index_, document_order(index_.count(), options_.seed, epoch, options_.shuffle),
                   limits(), min_batch, epoch);
    planned_ = true;
  }
  return plan_;
}

int64_t DocumentLoader::steps_in_epoch(int64_t epoch) {
  const EpochPlan& p = plan(epoch);
  const int64_t steps = p.micro_batches() / micro_batches_per_step();
  if (steps == 0)
    throw DataFileError(fmt::format(
        "{}: epoch {} packs {} documents ({} units, {} tokens) into {} micro-batches of {} × {}, "
        "fewer than one step of grad_accum × world_size = {} × {}",
        data_.name(), epoch, index_.count(), p.units.size(), data_.size(), p.micro_batches(),
        options_.micro_batch, options_.seq_len, options_.grad_accum, options_.world_size));
  return steps;
}

void DocumentLoader::check_position(DataPosition pos) {
  if (pos.epoch < 0 || pos.step < 0 || pos.step >= steps_in_epoch(pos.epoch))
    throw std::out_of_range(fmt::format(
        "data position (epoch {}, step {}): outside the data ({}): epoch {} has {} steps",
        pos.epoch, pos.step, data_.name(), pos.epoch,
        pos.epoch < 0 ? int64_t(0) : steps_in_epoch(pos.epoch)));
}

DataPosition DocumentLoader::next(DataPosition pos) {
  check_position(pos);
  return pos.next(steps_in_epoch(pos.epoch));
}

DataPosition DocumentLoader::position_at(int64_t global_step) {
  if (global_step < 0)
    throw std::out_of_range(fmt::format("document loader: negative global step {}", global_step));
  DataPosition pos;
  for (int64_t steps; global_step >= (steps = steps_in_epoch(pos.epoch)); ++pos.epoch)
    global_step -= steps;
  pos.step = global_step;
  return pos;
}

int64_t DocumentLoader::micro_batch_index(int64_t step, int micro_step) const {
  return step * micro_batches_per_step() + int64_t(micro_step) * options_.world_size +
         options_.rank;
}

StepCounts DocumentLoader::fill(DataPosition pos, std::span<const MicroBatchArrays> out) {
  if (int64_t(out.size()) != options_.grad_accum)
    throw std::invalid_argument(
        fmt::format("document loader: {} micro-batch arrays for {} micro-steps", out.size(),
                    options_.grad_accum));
  check_position(pos);
  const EpochPlan& p = plan(pos.epoch);
  const PackingLimits lim = limits();
  const int64_t slots = int64_t(options_.micro_batch) * options_.seq_len;
  StepCounts counts;
  const int64_t first = pos.step * micro_batches_per_step();
  for (int64_t m = first; m < first + micro_batches_per_step(); ++m)
    counts.global +=
        {p.sequences(m), p.batch_real_tokens[size_t(m)], slots - p.batch_real_tokens[size_t(m)]};
  for (int k = 0; k < options_.grad_accum; ++k)
    counts.rank += pack_micro_batch(data_, p.micro_batch(micro_batch_index(pos.step, k)), lim,
                                    index_.separator(), out[size_t(k)]);
  return counts;
}

}  // namespace hybrid::engine
