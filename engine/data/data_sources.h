// The training and validation token streams a Config asks for: llm.c shards
// (hybrid.data.train / .val globs, tokens checked against the model's vocab) or
// synthetic Markov-chain data generated in memory from hybrid.seed.
#pragma once

#include <limits>

#include "engine/config/config.h"
#include "engine/data/token_dataset.h"

namespace hybrid::engine {

struct DataSources {
  TokenDataset train;
  TokenDataset val;  // empty when there is no validation data
  bool synthetic = false;
  // Synthetic data only (NaN otherwise): measured unigram entropy of the training
  // stream and the chain's analytic entropy rate, in nats per token.
  double unigram_entropy = std::numeric_limits<double>::quiet_NaN();
  double entropy_rate = std::numeric_limits<double>::quiet_NaN();
};

DataSources open_data_sources(const Config& config);

}  // namespace hybrid::engine
