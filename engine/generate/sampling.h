// How the next token is chosen from a row's logits, with Hugging Face's
// semantics: temperature 0 is greedy (the argmax, the lowest id on a tie);
// otherwise the logits are divided by the temperature, cut to the top_k
// largest (0: all), then to the smallest set of most probable tokens whose
// probability reaches top_p (always at least one), and one is drawn from what
// is left, renormalised. Each sequence draws from its own generator seeded
// from (seed, sequence index), so a sequence's tokens do not depend on the
// batch it runs in, nor on how many ranks run.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace hybrid::engine {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: no cut
  float top_p = 1.0f;        // in (0, 1]
  uint64_t seed = 0;
};

// Why `p` is not a valid choice ("" when it is), naming the field and its range.
std::string sampling_error(const SamplingParams& p);

class TokenSampler {
 public:
  TokenSampler(const SamplingParams& p, int sequence);
  // The next token from the first V logits of a row (fp32).
  int next(const float* logits, int V);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int>> kept_;  // scratch: (probability, id)
};

}  // namespace hybrid::engine
