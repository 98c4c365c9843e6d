// The 1-bit optimizers' compression memory as tracked memory: per compressed
// buffer a worker error of its padded size P and a server error of P/W floats,
// and the exchange buffers of one grouped call over all of them
// (comm::compressed_exchange_bytes), allocated from the engine's device
// allocator at initialisation (TracksCompressionErrors) from the layout the
// memory model sums (compression_layout), so predicted equals measured.
// OneBitAdam and ZeroOneAdam compress each parameter tensor, OneBitLamb all of
// them as one flat buffer; on one rank nothing is compressed and only 1-bit
// LAMB's flat buffer is held.
// An optimizer made outside an engine (tests) owns its errors instead, in host
// memory, made at its first compressed step.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/comm/compressed_all_reduce.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/model/module.h"

namespace hybrid::engine {

// Where each parameter tensor starts in the flat space, then the count: the
// segments make_lamb and the 1-bit optimizers take.
std::vector<int64_t> tensor_starts(const ModuleTree& tree);

// The lengths of the buffers an optimizer of `type` compresses each step over
// `world` data-parallel ranks (before padding): one per tensor (OneBitAdam,
// ZeroOneAdam), one of the parameter count (OneBitLamb); none for another
// type or on one rank.
std::vector<size_t> compressed_buffers(const std::string& type,
                                       const std::vector<int64_t>& tensor_starts, int world);

// 1-bit LAMB's flat momentum as it crosses the network, padded (on one rank
// too: it holds the scaled momentum beside the previous one); 0 for the others.
size_t compression_flat_floats(const std::string& type, const std::vector<int64_t>& tensor_starts,
                               int world);

// One entry per buffer ("compression_errors.<i>", MemCategory::optimizer,
// zeroed): CompressionErrors::floats(n, world) floats, worker then server;
// "compression_exchange" (MemCategory::comm): the grouped call's exchange; and
// "compression_flat" (MemCategory::comm): flat_floats floats, when not 0.
MemoryLayout compression_layout(const std::vector<size_t>& buffers, int world,
                                size_t flat_floats = 0);

// The errors and exchange memory of a set of buffers: tracked, in the
// allocator's memory (device memory in an engine on a GPU), or owned, in host
// memory, made when first needed by an optimizer that nothing tracks (tests).
class CompressionErrorSet {
 public:
  // Allocates the layout of `buffers` (and flat_floats) from `alloc` now.
  void track(TrackingAllocator& alloc, const std::vector<size_t>& buffers, int world,
             size_t flat_floats = 0);
  // Owned errors for these buffers, unless already made or tracked.
  void make(const std::vector<size_t>& buffers, int world);
  bool empty() const { return errors_.empty(); }
  comm::CompressionErrors& operator[](size_t i) { return errors_[i]; }
  std::span<comm::CompressionErrors> all() { return errors_; }
  // Tracked: compressed_exchange_bytes of the buffers, in the same memory;
  // owned: null (each call allocates its own).
  void* exchange() const { return memory_.view_if_present("compression_exchange").data(); }
  // Tracked: the flat_floats floats; else null.
  float* flat() const { return memory_.view_if_present("compression_flat").as<float>(); }
  // Back to zeros, through the memory's backend.
  void reset();

 private:
  kernels::Backend* backend_ = nullptr;  // whose memory the tracked errors are; null: owned
  LayoutBuffers memory_;
  std::vector<comm::CompressionErrors> errors_;
};

// Implemented by the 1-bit optimizers: the engine hands them its device
// allocator before the first step (engine.cpp).
class TracksCompressionErrors {
 public:
  virtual void track_errors_in(TrackingAllocator& alloc) = 0;

 protected:
  ~TracksCompressionErrors() = default;
};

}  // namespace hybrid::engine
