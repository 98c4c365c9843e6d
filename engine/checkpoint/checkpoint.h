// Checkpoints, DeepSpeed's way: DIR/TAG/ holds meta.json (global state, written
// by rank 0), one partition file per rank that owns optimizer state (its fp32
// master weights and optimizer state over a flat range, with a CRC-32 of the
// payload) and, in a "full" checkpoint, model.bin (every weight in fp32, llm.c's
// format). DIR/latest names the newest tag.
//
// Every file is written to a temporary name, fsynced and renamed; meta.json and
// then DIR/latest are written only after every rank's files are complete, so a
// crash mid-save leaves latest on the previous, complete tag. Partitions are
// flat ranges, so a checkpoint loads under a different world size or ZeRO
// stage: each rank reads the parts it now owns.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_owner.h"
#include "engine/comm/communicator.h"
#include "engine/zero/partition.h"

namespace hybrid::engine {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PartitionData {
  FlatRange range;
  int state_floats = 0;
  std::vector<float> master;  // range.size()
  std::vector<float> state;   // range.size() × state_floats
};

struct CheckpointWriteOptions {
  bool save_latest = true;  // point DIR/latest at the tag (DeepSpeed's save_latest)
  // Rank 0 writes further files into DIR/TAG (the consolidated model) alongside
  // its partition, before anything is published; a failure fails the save.
  std::function<void(const std::string& root)> extra_files;
  // Testing: runs on every rank once all files are complete, before meta.json
  // and latest (a crash here must leave latest alone).
  std::function<void()> before_publish;
};

// Collective. `meta` (rank 0's) must list "partitions": [{"rank", "begin", "end"}];
// `mine` is this rank's partition, or null when it owns none.
void write_checkpoint(const std::string& dir, const std::string& tag, comm::Communicator& comm,
                      const nlohmann::json& meta, const PartitionData* mine,
                      const CheckpointWriteOptions& options = {});

// Keep-last-k: deletes the oldest complete tags of `kind` ("full" or "optimizer",
// meta.json's "kind") among those whose name matches `managed` (the tags a save
// policy writes, e.g. "step\d+") and that belong to `owner` (its model and run
// lineage: another run's tags are neither counted nor deleted), keeping the newest
// `keep` by global step and never the tag `latest` names. Managed tags without meta.json that sort
// before latest (what a kill mid-save or mid-delete left) are deleted too. Other tags and files are
// left alone. Returns the tags deleted. Call on one rank, after latest has moved.
std::vector<std::string> prune_checkpoints(const std::string& dir, const std::string& kind,
                                           int64_t keep, const std::string& managed,
                                           const CheckpointOwner& owner);

// The tag to load: `tag`, or the content of DIR/latest when empty.
std::string resolve_checkpoint_tag(const std::string& dir, const std::string& tag);
// Reads DIR/TAG/meta.json and validates it (validate_checkpoint_meta).
nlohmann::json read_checkpoint_meta(const std::string& dir, const std::string& tag);
// Optimizer state floats per parameter a checkpoint may declare (Adam has 2).
inline constexpr int64_t kMaxStateFloats = 16;
// Throws CheckpointError naming `where` and the field unless every field the
// loaders read has its type and range: format, param_count, state_floats,
// world_size, the step counters, optimizer, model.{type, n_layer, n_embd, n_head,
// vocab_size, padded_vocab_size, seq_len}, lineage (a string, when present), loss_scaler
// (LossScaler::state(), when present)
// and partitions [{rank, begin, end, tp, pp}] with 0 <= begin <= end (tp and pp, whose
// flat space a partition is in: below tensor_parallel and pipeline_stages when present).
void validate_checkpoint_meta(const nlohmann::json& meta, const std::string& where);
// Fills master/state (sized for `want`) from whichever partitions overlap it,
// verifying each file's header, size (before anything is allocated) and checksum.
// Elements no partition covers stay 0.
void read_checkpoint_range(const std::string& dir, const std::string& tag,
                           const nlohmann::json& meta, FlatRange want, int state_floats,
                           float* master, float* state);

std::string partition_file_name(int rank);

}  // namespace hybrid::engine
