#include "engine/generate/sampling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace hybrid::engine {

std::string sampling_error(const SamplingParams& p) {
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature))
    return fmt::format("temperature {} must be a finite number >= 0 (0 is greedy)", p.temperature);
  if (p.top_k < 0) return fmt::format("top_k {} must be >= 0 (0 keeps every token)", p.top_k);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    return fmt::format("top_p {} must be in (0, 1]", p.top_p);
  return "";
}

TokenSampler::TokenSampler(const SamplingParams& p, int sequence)
    // A golden-ratio stride keeps the sequences' streams apart for nearby seeds.
    : p_(p), rng_(p.seed + 0x9E3779B97F4A7C15ull * uint64_t(sequence + 1)) {}

int TokenSampler::next(const float* logits, int V) {
  if (p_.temperature == 0.0f) return int(std::max_element(logits, logits + V) - logits);
  kept_.resize(size_t(V));
  for (int i = 0; i < V; ++i) kept_[size_t(i)] = {logits[i] / p_.temperature, i};
  // Most probable first; equal logits by id, so the order is the same everywhere.
  const auto before = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t n = kept_.size();
  if (p_.top_k > 0 && size_t(p_.top_k) < n) {
    n = size_t(p_.top_k);
    std::partial_sort(kept_.begin(), kept_.begin() + long(n), kept_.end(), before);
  } else if (p_.top_p < 1.0f) {
    std::sort(kept_.begin(), kept_.end(), before);
  }  // else no cut: the draw walks the vocabulary in id order, unsorted
  float mx = kept_[0].first;
  for (size_t i = 1; i < n; ++i) mx = std::max(mx, kept_[i].first);
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += kept_[i].first = std::exp(kept_[i].first - mx);
  if (p_.top_p < 1.0f) {  // keep while the mass before a token is under top_p
    double mass = 0.0;
    size_t keep = 0;
    while (keep < n && mass < double(p_.top_p) * total) mass += kept_[keep++].first;
    n = std::max<size_t>(keep, 1);
    total = 0.0;
    for (size_t i = 0; i < n; ++i) total += kept_[i].first;
  }
  // A uniform draw in [0, total) from 53 random bits: the same on every platform.
  const double u = double(rng_() >> 11) * 0x1.0p-53 * total;
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += kept_[i].first;
    if (u < acc) return kept_[i].second;
  }
  return kept_[n - 1].second;
}

}  // namespace hybrid::engine
