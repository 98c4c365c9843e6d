// Checkpoints: DIR/TAG/ holds meta.json (global state, written by rank 0) and
// one partition file per rank that owns optimizer state (its fp32 master
// weights and optimizer state over a flat range, with a CRC-32 of the payload).
// Every file is written to a temporary name, fsynced and renamed; DIR/latest is
// rewritten only after every rank's files are complete, so it never names a
// partial checkpoint. Partitions are flat ranges, so a checkpoint loads under a
// different world size or ZeRO stage: each rank reads the parts it now owns.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// Collective. `meta` (rank 0's) must list "partitions": [{"rank", "begin", "end"}];
// `mine` is this rank's partition, or null when it owns none.
void write_checkpoint(const std::string& dir, const std::string& tag, comm::Communicator& comm,
                      const nlohmann::json& meta, const PartitionData* mine);

// The tag to load: `tag`, or the content of DIR/latest when empty.
std::string resolve_checkpoint_tag(const std::string& dir, const std::string& tag);
nlohmann::json read_checkpoint_meta(const std::string& dir, const std::string& tag);
// Fills master/state (sized for `want`) from whichever partitions overlap it,
// verifying each file's size and checksum. Elements no partition covers stay 0.
void read_checkpoint_range(const std::string& dir, const std::string& tag,
                           const nlohmann::json& meta, FlatRange want, int state_floats,
                           float* master, float* state);

std::string partition_file_name(int rank);

}  // namespace hybrid::engine
