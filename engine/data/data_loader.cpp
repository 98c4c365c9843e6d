#include "engine/data/data_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "engine/data/data_file_error.h"

namespace hybrid::engine {

void check_batch_shape(const BatchShape& s, std::string_view who) {
  if (s.micro_batch <= 0 || s.seq_len <= 0 || s.grad_accum <= 0 || s.world_size <= 0)
    throw std::invalid_argument(fmt::format(
        "{}: micro_batch ({}), seq_len ({}), grad_accum ({}) and world_size ({}) must be positive",
        who, s.micro_batch, s.seq_len, s.grad_accum, s.world_size));
  if (s.rank < 0 || s.rank >= s.world_size)
    throw std::invalid_argument(
        fmt::format("{}: rank {} outside 0..{}", who, s.rank, s.world_size - 1));
}

DataLoader::DataLoader(TokenDataset data, BatchShape shape)
    : data_(std::move(data)), shape_(shape) {
  const BatchShape& s = shape_;
  check_batch_shape(s, "data loader");
  if (data_.size() < int64_t(s.seq_len) + 1)
    throw DataFileError(fmt::format("{}: {} tokens, fewer than one sample of seq_len + 1 = {}",
                                    data_.name(), data_.size(), int64_t(s.seq_len) + 1));
}

int64_t DataLoader::samples_per_step() const {
  return int64_t(shape_.micro_batch) * shape_.grad_accum * shape_.world_size;
}

int64_t DataLoader::steps_per_epoch() const {
  return std::max<int64_t>(1, data_.size() / shape_.seq_len / samples_per_step());
}

int64_t DataLoader::sample_index(int64_t step, int micro_step, int row) const {
  if (step < 0) throw std::out_of_range(fmt::format("data loader: negative step {}", step));
  if (micro_step < 0 || micro_step >= shape_.grad_accum)
    throw std::out_of_range(
        fmt::format("data loader: micro_step {} outside 0..{}", micro_step, shape_.grad_accum - 1));
  const int64_t b = shape_.micro_batch;
  return step * samples_per_step() + (int64_t(micro_step) * shape_.world_size + shape_.rank) * b +
         row;
}

int64_t DataLoader::sample_start(int64_t sample) const {
  // 128-bit product: j·T can exceed int64 on very long runs.
  const __int128 pos = __int128(sample) * shape_.seq_len;
  return int64_t(pos % data_.size());
}

void DataLoader::fill(int64_t step, int micro_step, int32_t* inputs, int32_t* targets) const {
  const int T = shape_.seq_len;
  for (int i = 0; i < shape_.micro_batch; ++i) {
    const int64_t start = sample_start(sample_index(step, micro_step, i));
    data_.copy_wrapped(start, T, inputs + int64_t(i) * T);
    data_.copy_wrapped(start + 1, T, targets + int64_t(i) * T);
  }
}

}  // namespace hybrid::engine
