// The token sampler against the probabilities it should draw from (Hugging
// Face's warpers: temperature, then top-k, then top-p): frequencies of 40,000
// seeded draws within 0.01 of the renormalised softmax (about 4 standard
// deviations at these probabilities), greedy's lowest id on a tie, and the
// named refusals of bad parameters.
#include "engine/generate/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hybrid::engine {
namespace {

// Frequencies of each of the V ids over `draws` draws of one sequence's sampler.
std::vector<double> frequencies(const SamplingParams& p, const std::vector<float>& logits,
                                int draws = 40000) {
  TokenSampler s(p, 0);
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i)
    f[size_t(s.next(logits.data(), int(logits.size())))] += 1.0 / draws;
  return f;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.01) << "token " << i;
}

const std::vector<float> kLogits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                    std::log(0.05f)};

TEST(TokenSampler, DrawsFromTheSoftmaxCutByTopKAndTopP) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 3;
  expect_close(frequencies(p, kLogits), {0.5, 0.3, 0.15, 0.05});
  p.top_k = 2;  // the two most likely, renormalised
  expect_close(frequencies(p, kLogits), {0.625, 0.375, 0.0, 0.0});
  p.top_k = 0;
  p.top_p = 0.6f;  // 0.5 before the second token is under 0.6; 0.8 before the third is not
  expect_close(frequencies(p, kLogits), {0.625, 0.375, 0.0, 0.0});
  p.top_p = 1.0f;
  p.temperature = 2.0f;  // p^(1/2), renormalised
  std::vector<double> want;
  double total = 0;
  for (double q : {0.5, 0.3, 0.15, 0.05}) total += std::sqrt(q);
  for (double q : {0.5, 0.3, 0.15, 0.05}) want.push_back(std::sqrt(q) / total);
  expect_close(frequencies(p, kLogits), want);
}

TEST(TokenSampler, GreedyTakesTheLowestIdOfATieAndSequencesDrawApart) {
  TokenSampler greedy(SamplingParams{}, 0);
  const std::vector<float> tie = {0.1f, 0.7f, 0.7f, 0.2f};
  EXPECT_EQ(greedy.next(tie.data(), 4), 1);
  SamplingParams p;
  p.temperature = 1.0f;
  TokenSampler a(p, 0), b(p, 1), a_again(p, 0);
  std::vector<int> da, db, da_again;
  for (int i = 0; i < 64; ++i) {
    da.push_back(a.next(kLogits.data(), 4));
    db.push_back(b.next(kLogits.data(), 4));
    da_again.push_back(a_again.next(kLogits.data(), 4));
  }
  EXPECT_EQ(da, da_again);
  EXPECT_NE(da, db);
}

TEST(TokenSampler, BadParametersAreNamed) {
  SamplingParams p;
  EXPECT_EQ(sampling_error(p), "");
  p.temperature = NAN;
  EXPECT_NE(sampling_error(p).find("temperature nan must be a finite number >= 0"),
            std::string::npos);
  p = {};
  p.top_k = -1;
  EXPECT_NE(sampling_error(p).find("top_k -1 must be >= 0"), std::string::npos);
}

}  // namespace
}  // namespace hybrid::engine
