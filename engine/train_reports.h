// The run summary's reports (engine/train_summary.h), measured from the engine
// and the step records after the training loop. What differs between parallel
// layouts (a pipeline's waiting, the communicator groups) is decided here, so
// that the trainer treats every layout alike.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/config/config.h"
#include "engine/step_record.h"
#include "engine/train_summary.h"

namespace hybrid {

class Engine;

// The steps, their losses and rates from the median step time.
void summarize_steps(std::span<const StepRecord> records, double tokens_per_step, int seq_len,
                     TrainSummary& out);

// The communicator's counters when the loop starts; report() turns the bytes
// sent since into bytes per step, and adds the step records' exposed time.
class CommMeter {
 public:
  explicit CommMeter(const Engine& engine);
  CommunicationReport report(const Engine& engine, std::span<const StepRecord> records) const;

 private:
  engine::comm::Communicator::Counters before_;
  std::vector<std::pair<std::string, engine::comm::Communicator::Counters>> groups_before_;
};

// Measured memory (device, host, NVMe files) and the swap files' I/O: call it
// after training and before any export, whose buffers would count.
MemoryReport measure_memory(Engine& engine);

// The memory model's prediction for this rank's pipeline stage.
void add_memory_prediction(const engine::Config& cfg, Engine& engine, MemoryReport& out);

// With pipeline stages: the share of the last step's schedule this rank spent
// waiting on transfers (StepRecord::pipeline_waiting). None with one stage.
std::optional<double> pipeline_waiting(const Engine& engine);

// With pipeline stages: the waiting shares of the steps and of every rank
// (collective: every rank calls it). Nothing with one stage.
PipelineReport pipeline_report(const engine::Config& cfg, Engine& engine,
                               std::span<const StepRecord> records);

}  // namespace hybrid
