#include "engine/comm/compressed_all_reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace hybrid::engine::comm {

namespace {

void check_world(int world) {
  if (world < 1)
    throw std::invalid_argument(
        fmt::format("compressed all-reduce: world size must be >= 1, got {}", world));
}

void check_errors(const CompressionErrors& e, size_t n, int world) {
  const size_t padded = compressed_padded_size(n, world);
  if (e.worker.size() != padded || e.server.size() != padded / size_t(world))
    throw std::invalid_argument(fmt::format(
        "compressed_all_reduce: errors hold {} worker and {} server values; a tensor of {} on {} "
        "ranks needs {} and {} (CompressionErrors(n, world))",
        e.worker.size(), e.server.size(), n, world, padded, padded / size_t(world)));
}

// Waits for every handle, even after one failed (the others still write into
// this call's buffers), then rethrows the first failure.
void wait_all(std::initializer_list<HandlePtr> handles) {
  std::exception_ptr first;
  for (const HandlePtr& h : handles) try {
      h->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  if (first) std::rethrow_exception(first);
}

// A call's exchange bytes: count scales and world·count gathered ones, and
// world blocks of packed signs to send and as many received.
size_t exchange_bytes(size_t count, size_t world, size_t block) {
  return (count + world * count) * sizeof(float) + 2 * world * block;
}

// A grouped call's exchange buffers, carved from compressed_exchange_bytes:
// the scales first (fp32 alignment), then the two blocks of packed signs.
struct Exchange {
  float* scales;      // count
  float* all_scales;  // world · count
  uint8_t* send;      // world · block
  uint8_t* received;  // world · block
};
Exchange carve(void* memory, size_t count, size_t world, size_t block) {
  auto* scales = static_cast<float*>(memory);
  auto* bytes = reinterpret_cast<uint8_t*>(scales + count + world * count);
  return {scales, scales + count, bytes, bytes + world * block};
}

// One phase's exchange: the packed blocks (all_to_all) and the scales (all_gather).
void exchange(Communicator& comm, const Exchange& x, size_t count, size_t block) {
  const std::vector<size_t> counts(size_t(comm.world_size()), count);
  auto blocks = comm.all_to_all_async(x.send, x.received, block);
  auto gathered = comm.all_gather_async(x.scales, x.all_scales, counts, DType::f32);
  wait_all({blocks, gathered});
}

// The call's non-empty tensors as the backend's ops take them, and the block.
struct Plan {
  std::vector<kernels::SignTensor> tensors;
  size_t block = 0;
};
Plan plan_of(std::span<const CompressedTensor> tensors, std::span<CompressionErrors> errors,
             int world) {
  if (errors.size() != tensors.size())
    throw std::invalid_argument(fmt::format("compressed_all_reduce: {} tensors but {} error states",
                                            tensors.size(), errors.size()));
  Plan plan;
  for (size_t t = 0; t < tensors.size(); ++t) {
    check_errors(errors[t], tensors[t].n, world);
    if (tensors[t].n == 0) continue;  // an empty tensor sends nothing, not even a scale
    if (!tensors[t].data)
      throw std::invalid_argument(fmt::format("compressed_all_reduce: tensor {} is null", t));
    const size_t padded = errors[t].worker.size();
    plan.tensors.push_back({tensors[t].data, tensors[t].n, padded, errors[t].worker.data(),
                            errors[t].server.data(), plan.block});
    plan.block += padded / size_t(world) / 8;
  }
  return plan;
}

// Backend memory for one call when the caller keeps none.
class CallScratch {
 public:
  CallScratch(kernels::Backend& backend, size_t bytes)
      : backend_(backend), bytes_(bytes), ptr_(bytes ? backend.allocate(bytes) : nullptr) {}
  ~CallScratch() {
    if (ptr_) backend_.deallocate(ptr_, bytes_);
  }
  CallScratch(const CallScratch&) = delete;
  CallScratch& operator=(const CallScratch&) = delete;
  void* get() const { return ptr_; }

 private:
  kernels::Backend& backend_;
  size_t bytes_;
  void* ptr_;
};

}  // namespace

size_t compressed_padded_size(size_t n, int world) {
  check_world(world);
  const size_t w = size_t(world);
  const size_t multiple = w * (w * 8 / std::gcd(w, size_t(8)));
  return (n + multiple - 1) / multiple * multiple;
}

size_t CompressionErrors::floats(size_t n, int world) {
  const size_t padded = compressed_padded_size(n, world);
  return padded + padded / size_t(world);
}

CompressionErrors::CompressionErrors(size_t n, int world) : owned_(floats(n, world), 0.0f) {
  const size_t padded = compressed_padded_size(n, world);
  worker = std::span<float>(owned_.data(), padded);
  server = std::span<float>(owned_.data() + padded, padded / size_t(world));
}

CompressionErrors::CompressionErrors(size_t n, int world, float* storage) {
  const size_t padded = compressed_padded_size(n, world);
  worker = std::span<float>(storage, padded);
  server = std::span<float>(storage + padded, padded / size_t(world));
}

void CompressionErrors::reset() {
  std::fill(worker.begin(), worker.end(), 0.0f);
  std::fill(server.begin(), server.end(), 0.0f);
}

size_t compressed_exchange_bytes(std::span<const size_t> sizes, int world) {
  const size_t w = size_t(world);
  size_t count = 0, block = 0;
  for (size_t n : sizes)
    if (n) ++count, block += compressed_padded_size(n, world) / w / 8;
  return exchange_bytes(count, w, block);
}

void compressed_all_reduce(kernels::Backend& backend, Communicator& comm, float* buffer, size_t n,
                           CompressionErrors& errors) {
  check_errors(errors, n, comm.world_size());
  if (n == 0) return;
  if (!buffer) throw std::invalid_argument("compressed_all_reduce: buffer is null");
  const CompressedTensor one{buffer, n};
  compressed_all_reduce(backend, comm, std::span(&one, 1), std::span(&errors, 1));
}

void compressed_all_reduce(kernels::Backend& backend, Communicator& comm,
                           std::span<const CompressedTensor> tensors,
                           std::span<CompressionErrors> errors, void* exchange_memory) {
  const Plan plan = plan_of(tensors, errors, comm.world_size());
  const size_t count = plan.tensors.size(), w = size_t(comm.world_size()), block = plan.block;
  if (count == 0) return;
  std::optional<CallScratch> scratch;
  if (!exchange_memory)
    exchange_memory = scratch.emplace(backend, exchange_bytes(count, w, block)).get();
  const Exchange x = carve(exchange_memory, count, w, block);
  const kernels::SignGroup group{plan.tensors.data(), count, int(w), block};
  backend.sign_compress_worker(group, x.send, x.scales);
  exchange(comm, x, count, block);
  backend.sign_compress_server(group, x.received, x.all_scales, x.send, x.scales);
  for (size_t r = 1; r < w; ++r)
    backend.copy(x.send + r * block, x.send, block);  // one block for all
  exchange(comm, x, count, block);
  backend.sign_decompress(group, x.received, x.all_scales);
}

CommVolume compressed_all_reduce_volume(size_t n, int world) {
  const size_t padded = compressed_padded_size(n, world);
  if (padded == 0) return {};
  const uint64_t w = uint64_t(world), block = padded / w / 8;  // packed signs per rank pair
  return {2 * w * block + 2 * w * sizeof(float),
          double(w - 1) * double(2 * block + 2 * sizeof(float))};
}

CommVolume fp32_all_reduce_volume(size_t n, int world) {
  check_world(world);
  const double bytes = double(n) * sizeof(float);
  return {uint64_t(n) * sizeof(float), 2.0 * double(world - 1) / double(world) * bytes};
}

}  // namespace hybrid::engine::comm
