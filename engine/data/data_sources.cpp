#include "engine/data/data_sources.h"

#include "engine/data/synthetic.h"

namespace hybrid::engine {

DataSources open_data_sources(const Config& c) {
  DataSources out;
  if (c.data.synthetic) {
    SyntheticSpec spec;
    spec.vocab_size = c.model.vocab_size;
    spec.branching = c.data.synthetic_branching;
    spec.noise = c.data.synthetic_noise;
    spec.seed = c.seed;
    SyntheticData d =
        make_synthetic_data(spec, c.data.synthetic_tokens, c.data.synthetic_val_tokens);
    out.train = std::move(d.train);
    out.val = std::move(d.val);
    out.synthetic = true;
    out.unigram_entropy = d.unigram_entropy;
    out.entropy_rate = d.entropy_rate;
    return out;
  }
  out.train = TokenDataset::open(c.data.train, c.model.vocab_size);
  if (!c.data.val.empty()) out.val = TokenDataset::open(c.data.val, c.model.vocab_size);
  return out;
}

}  // namespace hybrid::engine
