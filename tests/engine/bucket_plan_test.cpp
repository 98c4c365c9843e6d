// The buckets the gradient reducer fills (engine/zero/bucket_plan.h), which the
// cost model prices: every gradient in exactly one of them, none over the
// capacity unless one module alone exceeds it, the tied embedding's reduced
// after backward, and the capacity between the largest module and the whole;
// and the engine's reducer issues one collective per planned bucket.
#include "engine/zero/bucket_plan.h"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/model/gpt2/gpt2.h"
#include "tests/engine/engine_test_util.h"

namespace hybrid::engine {
namespace {

// 3 blocks of 32 channels, 2 heads, a 64-token vocabulary, 16 positions.
ModelConfig small_gpt2() { return test::gpt2_sized(3, 32, 2, 64, 16); }

int64_t sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t(0));
}

TEST(BucketPlan, EveryGradientIsInOneBucketOfAtMostTheCapacity) {
  GPT2 model(small_gpt2(), 64);
  ModuleTree tree(model);
  const int64_t C = 32, wte = 64 * C;
  const int64_t largest = 4 * C * C + 4 * C;  // mlp.c_fc: the largest module (c_attn is 3C² + 3C)
  for (int64_t asked : {int64_t(1), int64_t(5000), int64_t(20000), int64_t(1) << 40}) {
    SCOPED_TRACE(asked);
    const int64_t cap = reduce_bucket_capacity(tree, asked);
    EXPECT_EQ(cap, std::max(largest, std::min(asked, tree.param_count() - wte)));
    const auto b = reduction_buckets(tree, asked);
    ASSERT_EQ(b.after_backward, std::vector<int64_t>{wte});  // shared by wte and lm_head
    EXPECT_EQ(sum(b.during_backward) + wte, tree.param_count());
    for (int64_t n : b.during_backward) EXPECT_LE(n, cap);
    // Neighbours join while they fit: no two neighbouring buckets would fit in one.
    for (size_t i = 1; i < b.during_backward.size(); ++i)
      EXPECT_GT(b.during_backward[i - 1] + b.during_backward[i], cap);
  }
  // All in one, or one module per bucket at the smallest capacity (the
  // layernorms, C + C each, join their neighbours).
  EXPECT_EQ(reduction_buckets(tree, int64_t(1) << 40).during_backward.size(), 1u);
  EXPECT_GE(reduction_buckets(tree, 1).during_backward.size(), size_t(3 * 3));
}

// One training step per bucket size, ZeRO 0-2 with overlap_comm: the gradient
// collectives the reducer issued (the same kind for every bucket; the step's
// other collectives do not depend on the bucket size) differ between two
// bucket sizes by exactly the difference in planned buckets.
TEST(BucketPlan, TheReducerIssuesOneCollectivePerPlannedBucket) {
  for (int stage : {0, 1, 2}) {
    SCOPED_TRACE(stage);
    const auto kind = stage == 0 ? profiler::CollectiveKind::all_reduce
                                 : profiler::CollectiveKind::reduce_scatter;
    auto gradient_collectives = [&](int64_t bucket, size_t* planned) {
      const auto cfg = test::tiny_config(
          {{"zero_optimization",
            {{"stage", stage}, {"overlap_comm", true}, {"reduce_bucket_size", bucket}}}});
      auto e = initialize(cfg, make_model(cfg), test::quiet());
      *planned = reduction_buckets(e->module_tree(), bucket).during_backward.size();
      test::train_on_fixed_batch(*e, 1);
      return int64_t(e->comm_counters().calls[int(kind)]);
    };
    size_t one = 0, many = 0;
    const int64_t whole = gradient_collectives(int64_t(1) << 40, &one);
    const int64_t split = gradient_collectives(1, &many);
    EXPECT_EQ(one, 1u);
    EXPECT_GE(many, 4u);
    EXPECT_EQ(split - whole, int64_t(many) - int64_t(one));
  }
}

}  // namespace
}  // namespace hybrid::engine
