// The 3D-parallel topology against its closed form (tp innermost, then dp,
// then pp), its groups partitioning the world, errors naming the config keys,
// and split() of the single-process communicator.
#include "engine/parallel/topology.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "engine/config/config.h"

namespace hybrid::engine {
namespace {

constexpr ParallelAxis kAxes[] = {ParallelAxis::tp, ParallelAxis::dp, ParallelAxis::pp};

TEST(Topology, RanksAndCoordinatesFollowTheClosedForm) {
  for (auto [world, tp, pp] : {std::tuple{8, 2, 2}, std::tuple{12, 3, 2}, std::tuple{6, 1, 3},
                               std::tuple{4, 4, 1}, std::tuple{1, 1, 1}}) {
    const Topology t(world, tp, pp);
    const int dp = world / (tp * pp);
    EXPECT_EQ(t.dp(), dp);
    for (int r = 0; r < world; ++r) {
      const TopologyCoords c = t.coords(r);
      EXPECT_EQ(r, (c.pp * dp + c.dp) * tp + c.tp);
      EXPECT_EQ(t.rank_of(c), r);
    }
  }
  const Topology t(8, 2, 2);
  EXPECT_EQ(t.coords(5), (TopologyCoords{1, 0, 1}));
  EXPECT_EQ(t.group(ParallelAxis::tp, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(t.group(ParallelAxis::dp, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(t.group(ParallelAxis::pp, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(t.describe(), "world 8 = pp 2 x dp 2 x tp 2");
}

// Along each axis the groups cover every rank once, each group shares one
// index (the split color) and different groups have different ones.
TEST(Topology, GroupsPartitionTheWorldWithOneColorEach) {
  const Topology t(24, 2, 3);
  for (ParallelAxis a : kAxes) {
    std::set<int> seen, colors;
    for (int r = 0; r < t.world(); ++r) {
      const auto g = t.group(a, r);
      EXPECT_EQ(int(g.size()), t.size(a));
      EXPECT_NE(std::find(g.begin(), g.end(), r), g.end());
      for (int m : g) EXPECT_EQ(t.group_index(a, m), t.group_index(a, r)) << axis_name(a);
      if (g.front() == r) {
        for (int m : g) EXPECT_TRUE(seen.insert(m).second) << axis_name(a) << " rank " << m;
        EXPECT_TRUE(colors.insert(t.group_index(a, r)).second);
      }
    }
    EXPECT_EQ(int(seen.size()), t.world());
    EXPECT_EQ(int(colors.size()), t.world() / t.size(a));
    EXPECT_EQ(*colors.rbegin(), t.world() / t.size(a) - 1);
  }
}

// What split() makes of every rank's arguments: the ranks of `rank`'s colour,
// ordered by key, ties by rank (MPI_Comm_split's and ncclCommSplit's order).
std::vector<int> split_group(const std::vector<SplitArgs>& args, int rank) {
  std::vector<int> members;
  for (int r = 0; r < int(args.size()); ++r)
    if (args[size_t(r)].color == args[size_t(rank)].color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return args[size_t(a)].key < args[size_t(b)].key; });
  return members;
}

// The split arguments (the same on the host and on the device communicator)
// make exactly the topology's groups, group rank = index along the axis; the
// tied group holds the first and last stage of each pipeline, in stage order,
// and every middle stage alone, under colours no pp group uses.
TEST(Topology, SplitArgumentsMakeTheGroupsAndTheTiedPairs) {
  for (auto [world, tp, pp] :
       {std::tuple{8, 2, 2}, std::tuple{12, 2, 3}, std::tuple{4, 1, 4}, std::tuple{2, 2, 1}}) {
    const Topology t(world, tp, pp);
    for (ParallelAxis a : kAxes) {
      std::vector<SplitArgs> args;
      for (int r = 0; r < world; ++r) args.push_back(t.split_args(a, r));
      for (int r = 0; r < world; ++r) {
        EXPECT_GE(args[size_t(r)].color, 0);
        const auto g = split_group(args, r);
        EXPECT_EQ(g, t.group(a, r)) << axis_name(a) << " rank " << r;
        EXPECT_EQ(g[size_t(args[size_t(r)].key)], r) << axis_name(a) << " rank " << r;
      }
    }
    std::vector<SplitArgs> tied;
    for (int r = 0; r < world; ++r) tied.push_back(t.tied_split_args(r));
    for (int r = 0; r < world; ++r) {
      const TopologyCoords c = t.coords(r);
      const auto g = split_group(tied, r);
      EXPECT_GE(tied[size_t(r)].color, 0);
      if (c.pp != 0 && c.pp != pp - 1) {
        EXPECT_EQ(g, std::vector<int>{r}) << "middle stage rank " << r;
        EXPECT_GE(tied[size_t(r)].color, t.dp() * t.tp()) << "past the pipelines' colours";
        continue;
      }
      const auto line = t.group(ParallelAxis::pp, r);
      const std::vector<int> ends =
          pp == 1 ? std::vector<int>{r} : std::vector<int>{line.front(), line.back()};
      EXPECT_EQ(g, ends) << "rank " << r;
    }
  }
}

TEST(Topology, BadSizesNameTheKeys) {
  auto message = [](int world, int tp, int pp) {
    try {
      Topology(world, tp, pp);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message(8, 3, 1),
            "tensor_model_parallel_size (3) x pipeline.stages (1) = 3 must divide the 8 ranks");
  EXPECT_EQ(message(8, 0, 1), "tensor_model_parallel_size must be >= 1, got 0");
  EXPECT_EQ(message(8, 1, -2), "pipeline.stages must be >= 1, got -2");
  EXPECT_THROW(Topology(8, 2, 2).coords(8), std::out_of_range);
  EXPECT_THROW(Topology(8, 2, 2).rank_of({0, 2, 0}), std::out_of_range);
}

TEST(Topology, OneProcessGroupsAreOneProcess) {
  auto world = comm::make_single_communicator();
  const Topology t(1, 1, 1);
  auto g = make_group_communicators(*world, t);
  for (ParallelAxis a : kAxes) {
    EXPECT_EQ(g.of(a).world_size(), 1);
    float x = 3.0f;
    g.of(a).all_reduce(&x, 1, kernels::DType::f32, comm::ReduceOp::sum);
    EXPECT_EQ(x, 3.0f);
  }
  EXPECT_THROW(world->split(-1, 0), std::invalid_argument);
  EXPECT_THROW(make_group_communicators(*world, Topology(2, 2, 1)), std::invalid_argument);
}

// The config's sizes: pipeline stages divide the world and leave the batch
// triad to the data-parallel ranks; tensor-parallel sizes that do not split
// the heads or the vocabulary evenly are refused naming the key, and pipeline
// stages with ZeRO-2 or 3 are refused naming both keys, as DeepSpeed refuses
// them.
TEST(ParallelismConfig, PipelineStagesParseAndRefusalsNameTheKeys) {
  auto error = [](const nlohmann::json& j, int world = 4) {
    try {
      parse_config(j, world);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const nlohmann::json base = {{"train_micro_batch_size_per_gpu", 1}};
  auto with = [&](const nlohmann::json& patch) {
    nlohmann::json j = base;
    j.merge_patch(patch);
    return j;
  };
  EXPECT_EQ(error(with({{"tensor_model_parallel_size", 1}, {"pipeline", {{"stages", 1}}}})),
            "(no error)");
  // Tensor parallelism needs whole heads, equal channel and vocabulary shares,
  // and an optimizer that works on pieces.
  EXPECT_EQ(error(with({{"tensor_model_parallel_size", 2}})), "(no error)");
  EXPECT_THAT(
      error(with({{"tensor_model_parallel_size", 2},
                  {"hybrid", {{"model", {{"n_head", 3}, {"n_embd", 48}}}}}})),
      ::testing::HasSubstr("tensor_model_parallel_size 2 does not divide hybrid.model.n_head 3"));
  EXPECT_THAT(error(with({{"tensor_model_parallel_size", 4},
                          {"hybrid", {{"model", {{"n_head", 4}, {"padded_vocab_size", 8194}}}}}})),
              ::testing::HasSubstr("does not divide the padded vocabulary "
                                   "(hybrid.model.padded_vocab_size) 8194"));
  EXPECT_THAT(error(with({{"tensor_model_parallel_size", 2}, {"optimizer", {{"type", "Lamb"}}}})),
              ::testing::HasSubstr("optimizer Lamb with tensor_model_parallel_size 2"));
  EXPECT_THAT(error(with({{"pipeline", {{"stages", 3}}}})),
              ::testing::HasSubstr("pipeline.stages 3 = 3 does not divide the world of 4"));
  for (int stage : {2, 3}) {
    const std::string both =
        error(with({{"pipeline", {{"stages", 2}}}, {"zero_optimization", {{"stage", stage}}}}));
    EXPECT_THAT(both, ::testing::HasSubstr(
                          fmt::format("pipeline.stages 2 with zero_optimization.stage {}", stage)));
  }
  EXPECT_THAT(error(with({{"pipeline", {{"stages", 2}, {"partition", "type:Block"}}}})),
              ::testing::HasSubstr("pipeline.partition \"type:Block\""));
  // 4 ranks = 2 stages × 2 data-parallel ranks: the batch counts the latter.
  const Config c = parse_config(with({{"pipeline", {{"stages", 2}, {"partition", "uniform"}}},
                                      {"gradient_accumulation_steps", 4},
                                      {"zero_optimization", {{"stage", 1}}}}),
                                4);
  EXPECT_EQ(c.parallel.pipeline_stages, 2);
  EXPECT_EQ(c.parallel.data_parallel, 2);
  EXPECT_EQ(c.parallel.partition, "uniform");
  EXPECT_EQ(c.train_batch_size, 1 * 4 * 2);
}

}  // namespace
}  // namespace hybrid::engine
