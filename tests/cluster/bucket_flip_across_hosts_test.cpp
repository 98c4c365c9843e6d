// Issue 15's flip in bucket size: with links between hosts shaped to the
// issue's 1 Gbit/s and 1 ms, the tuner's best reduce_bucket_size differs from
// the unshaped links' as the cost model (fed by the probe of those links)
// predicts. Two test hosts, one rank each, ZeRO 0 with overlap_comm, sweep
// reduce_bucket_size {1, 1e8} for a model of many small modules (12 blocks,
// n_embd 128: 10 MiB of gradients in about 50 module-sized buckets):
//   1:   a bucket per module (joined up to the largest), each all-reduced as
//        soon as backward has filled it, hidden behind the rest of backward;
//   1e8: one bucket, all-reduced when backward is done, hiding nothing.
// Unshaped, the small buckets' 50 latencies cost little and the model has
// their overlap win (measured: a tie); at 1 ms each bucket's all-reduce pays
// two link crossings (about 2 ms, 0.1 s in all), more than backward can hide,
// and the one bucket wins, predicted and measured.
// Figures: docs/cluster.md.
#include <gtest/gtest.h>

#include "tests/cluster/flip_case.h"

namespace hybrid::autotune {
namespace {

json bucket_config() {
  return test::tiny_config(json::parse(R"({
    "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
    "zero_optimization": {"stage": 0, "overlap_comm": true},
    "hybrid": {"model": {"n_layer": 12, "n_embd": 128, "n_head": 4, "vocab_size": 1024,
                         "seq_len": 128}}})"));
}

const json kSpace = json::parse(R"({"rbs": [1, 100000000]})");

TEST(BucketFlipAcrossHosts, LatencyOnTheLinksFlipsTheBestBucketSizeAsTheCostModelPredicts) {
  FlipCases c;
  // Returns from the test where the helper skipped or failed it.
  ASSERT_NO_FATAL_FAILURE(run_flip_cases(bucket_config(), kSpace, "--rate 1gbit --delay 1ms", c));
  if (IsSkipped()) return;
  expect_the_picks_follow_the_numbers(c);
  // The flip, as the cost model predicts it from each probe's recorded rates:
  // small buckets unshaped, one bucket shaped. The measured edges are printed
  // above (quiet runs: one bucket wins by about 2x shaped, docs/cluster.md);
  // the load on the shared cores decides them, so they are figures, not verdicts.
  const std::string small = "mbs=4,gas=1,stage=0,rbs=1", one = "mbs=4,gas=1,stage=0,rbs=100000000";
  EXPECT_EQ(c.unshaped.predicted_best, small) << c.all;
  EXPECT_EQ(c.shaped.predicted_best, one) << c.all;
}

}  // namespace
}  // namespace hybrid::autotune
