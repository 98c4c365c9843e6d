// The analytical memory model: per-rank bytes per category for a config, world
// size and backend, without allocating anything. ZeRO's classic split (2Ψ
// 16-bit params, 2Ψ grads, 12Ψ fp32 master + Adam moments, divided by the world
// size per stage) plus the engine's actual buffers: activations from the model
// shape (engine/model/gpt2.h's ActivationLayout), communication buckets, and
// ZeRO-3's live gathered parameters. The autotuner prunes with it; tests hold it
// to the tracking allocator's measured peaks, category by category.
//
// `bytes` is the backend's (device) memory, what the memory budget limits;
// `host` is the host memory of an offloaded optimizer (master weights, moments
// and transfer staging: engine/zero/optimizer_offload.h), zero without offload.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config/config.h"
#include "engine/memory/tracking_allocator.h"

namespace hybrid::engine {

struct MemoryPrediction {
  std::array<uint64_t, kMemCategoryCount> bytes{};
  std::array<uint64_t, kMemCategoryCount> host{};
  uint64_t total() const;  // device
  uint64_t host_total() const;
  uint64_t operator[](MemCategory c) const { return bytes[size_t(c)]; }
  nlohmann::json to_json() const;
  std::string to_string() const;  // "params 1.2 GiB, grads … (total …)[; host …]"
};

// attention_saved_bytes: what the backend keeps per layer for attention backward
// (Backend::attention_saved_bytes for the micro-batch).
MemoryPrediction predict_memory(const Config& cfg, int world_size, uint64_t attention_saved_bytes);
MemoryPrediction predict_memory(const Config& cfg, int world_size, const kernels::Backend& backend);

}  // namespace hybrid::engine
