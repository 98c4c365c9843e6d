// Batches of whole documents (issue 30, item 3): each document is a unit of
// training (document_units.h), packed into micro-batches of B rows × T with
// positions that restart per unit and padding without loss (packing.h),
// optionally by a token budget (dynamic_batching.h), read in an order shuffled
// per epoch (document_order.h).
//
// Epoch e's plan packs the units into micro-batches M_0..M_{K-1} (epoch_plan.h).
// A global step consumes gas·W of them: step j of the epoch gives rank r's
// micro-step k the micro-batch M[j·gas·W + k·W + r], so ranks read disjoint
// units and one process with gas·W accumulation steps reads, step for step,
// what W ranks with gas steps read. An epoch has floor(K / (gas·W)) steps; the
// micro-batches left over are not read (as DeepSpeed trims its micro-batches to
// a multiple of gas·W).
//
// Every rank computes the same plans from the data and the options alone. The
// current epoch's plan is cached; the methods that may build one are not const
// and a loader is not to be shared between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "engine/data/data_position.h"
#include "engine/data/document_index.h"
#include "engine/data/dynamic_batching.h"
#include "engine/data/epoch_plan.h"
#include "engine/data/packing.h"
#include "engine/data/token_dataset.h"

namespace hybrid::engine {

struct DocumentLoaderOptions {
  int micro_batch = 1;                // B: rows per micro-batch
  int seq_len = 1;                    // T
  int grad_accum = 1;                 // gas: micro-steps per global step
  int world_size = 1;                 // W
  int rank = 0;                       // r
  std::optional<uint32_t> separator;  // end-of-text id; default: the stream's first token
  uint64_t seed = 0;
  bool shuffle = true;          // false: documents in stream order every epoch
  DynamicBatchOptions dynamic;  // max_tokens 0: off, rows fill
};

// One global step: over all ranks (`global.sequences` is the step's batch size
// for lr_scale), and this rank's gas micro-batches.
struct StepCounts {
  BatchCounts global;
  BatchCounts rank;
};

class DocumentLoader {
 public:
  // Indexes the documents and plans epoch 0. Throws std::invalid_argument for a
  // non-positive shape, a rank outside 0..W-1 or bad dynamic batching options
  // (named keys), and DataFileError when the stream is empty or epoch 0 has no step.
  DocumentLoader(TokenDataset data, DocumentLoaderOptions options);

  // Fills this rank's gas micro-batches of the step at `pos` (out[k]: micro-step
  // k, B·T values per array). Throws std::invalid_argument when out does not hold
  // gas entries, and as check_position does.
  StepCounts fill(DataPosition pos, std::span<const MicroBatchArrays> out);

  // Global steps in epoch e (at least 1: an epoch without one is a DataFileError
  // naming the documents, units, micro-batches, gas and W).
  int64_t steps_in_epoch(int64_t epoch);
  DataPosition next(DataPosition pos);
  // Throws std::out_of_range naming the position when the epoch is negative or
  // the step is outside 0..steps_in_epoch(epoch)-1 (a checkpoint from other data
  // or other batch options).
  void check_position(DataPosition pos);
  // The position after `global_step` steps from the start (epochs' steps summed).
  DataPosition position_at(int64_t global_step);

  // M's index for this rank's micro-step k of step j: j·gas·W + k·W + r.
  int64_t micro_batch_index(int64_t step, int micro_step) const;
  // Epoch e's plan (built unless cached; valid until a call asks for another epoch).
  const EpochPlan& plan(int64_t epoch);

  const DocumentIndex& documents() const { return index_; }
  const DocumentLoaderOptions& options() const { return options_; }
  uint32_t separator() const { return index_.separator(); }
  const TokenDataset& dataset() const { return data_; }
  PackingLimits limits() const;

 private:
  int64_t micro_batches_per_step() const;

  TokenDataset data_;
  DocumentLoaderOptions options_;
  DocumentIndex index_;
  EpochPlan plan_;
  bool planned_ = false;
};

}  // namespace hybrid::engine
