// The analytical memory model: per-rank bytes per category for a config, world
// size and backend, without allocating anything. It sums the very layouts the
// engine allocates from (engine/memory/layout.h): the ZeRO runtime's parameters,
// master weights and optimizer state (ZeRO's 2Ψ + 12Ψ split per stage), the
// gradient reducer's gradients and buckets, ZeRO-3's gathered parameters (their
// replayed peak, recomputation included) and the GPT-2 activations (with
// activation checkpointing: the shared scratch set, and the kept inputs in host
// memory with cpu_checkpointing); so a buffer cannot be allocated
// without being predicted. The autotuner prunes with it; tests hold it to the
// tracking allocator's measured bytes, category by category, exactly.
//
// `bytes` is the backend's (device) memory, what the memory budget limits;
// `host` is the host memory of an offloaded optimizer (master weights, moments
// and transfer staging: engine/zero/optimizer_offload.h) and of an offloaded
// parameter partition (engine/zero/param_store.h), zero without offload;
// `nvme` the swap files of the NVMe offload (ZeRO-Infinity), zero without it.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/config/config.h"
#include "engine/memory/layout.h"
#include "engine/memory/tracking_allocator.h"

namespace hybrid::engine {

struct MemoryPrediction {
  std::array<uint64_t, kMemCategoryCount> bytes{};
  std::array<uint64_t, kMemCategoryCount> host{};
  std::array<uint64_t, kMemCategoryCount> nvme{};
  uint64_t total() const;  // device
  uint64_t host_total() const;
  uint64_t nvme_total() const;
  uint64_t operator[](MemCategory c) const { return bytes[size_t(c)]; }
  nlohmann::json to_json() const;
  std::string to_string() const;  // "params 1.2 GiB, grads … (total …)[; host …][; nvme …]"
};

// Every buffer the engine allocates on rank 0 of world_size, in allocation
// order: on the device (ZeRO runtime, gradient reducer, ZeRO-3 gatherer,
// activations), in host memory (an offloaded optimizer and parameter
// partition; empty otherwise) and as NVMe swap files (empty without NVMe).
// Resident entries are held from initialisation on; on-demand ones (ZeRO-3's
// gathered parameters) come and go, and predict_memory adds their peak.
struct EngineLayouts {
  MemoryLayout device;
  MemoryLayout host;
  MemoryLayout nvme;
};
//
// world_size counts every rank. With pipeline.stages P > 1 a rank of pipeline
// stage `stage` holds its own parameters (CausalLM::set_pipeline_stage), ZeRO-partitioned
// over its data-parallel group, and one activation set of
// its own blocks per micro-batch it holds at once under 1F1B
// (in_flight_micro_batches). Throws std::invalid_argument when P does not
// divide world_size.
EngineLayouts engine_layouts(const Config& cfg, int world_size, uint64_t attention_saved_bytes,
                             int stage = 0);

// attention_saved_bytes: what the backend keeps per layer for attention backward
// (Backend::attention_saved_bytes for the micro-batch; under tensor parallelism
// a rank's: n_embd/tp channels, n_head/tp heads). A tensor-parallel rank holds
// its pieces of the parameters and activations (every tp rank alike).
// predict_stage_memory: a rank of pipeline stage `stage`; predict_memory: the
// peak rank's (the stage with the largest device total; the only one without
// a pipeline).
MemoryPrediction predict_stage_memory(const Config& cfg, int world_size, int stage,
                                      uint64_t attention_saved_bytes);
MemoryPrediction predict_stage_memory(const Config& cfg, int world_size, int stage,
                                      const kernels::Backend& backend);
MemoryPrediction predict_memory(const Config& cfg, int world_size, uint64_t attention_saved_bytes);

// The budget check that comes first: before the engine allocates or measures
// anything (GEMM providers), a rank of pipeline stage `stage` whose predicted
// device memory is over cfg.memory_budget fails with OutOfMemoryError naming the
// budget and the prediction, as its first allocation over the budget would later
// (the prediction is the allocator's bytes, exactly). No budget: no check.
void check_memory_budget(const Config& cfg, int world_size, int stage,
                         const kernels::Backend& backend);
MemoryPrediction predict_memory(const Config& cfg, int world_size, const kernels::Backend& backend);

// A generate call's shape: its prompts (rows), each row's cache positions (the
// longest prompt plus max_new_tokens), the cache's dtype, and the tensor
// parallel ranks the key/value heads split over.
struct GenerationShape {
  int rows = 1;
  int max_tokens = 1;
  kernels::DType cache_dtype = kernels::DType::f32;
  int tensor_parallel = 1;
};

// The key/value cache's bytes (MemCategory::kv_cache) for a generate call of
// `shape` on `model`, by its own formula: layers × 2 (keys and values) × rows ×
// kv heads / tp × max_tokens × head size × the dtype's bytes; tests hold it to
// the tracking allocator's kv_cache peak during the call, exactly.
uint64_t predict_kv_cache(const ModelConfig& model, const GenerationShape& shape);

// hybrid_engine.pin_parameters under ZeRO-3 (generation on the training
// engine, inference_tp_size 1): every module's parameters gathered at once and
// held for the whole generate call. The bytes this adds to the params category
// over what training keeps resident: every non-persistent unit of ZeRO-3's
// gatherer (the persistent ones are resident already); 0 when nothing is
// pinned (another stage, the block disabled, pin_parameters false, or a
// resharded replica). Tests hold it to the tracking allocator's params peak
// during a pinned call, exactly.
uint64_t predict_pinned_parameters(const Config& cfg);

}  // namespace hybrid::engine
