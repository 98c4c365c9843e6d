// 3D-parallel groups on 8 ranks (pp 2 x dp 2 x tp 2; oversubscribed on small
// machines, messages stay small): each axis' communicator, split from the
// world, reduces and gathers among exactly the ranks the topology's closed
// form names, its records carry the group's size, and world and group calls
// interleave in one order.
#include "engine/parallel/topology.h"
#include "mpi_test_harness.h"

namespace hybrid::test {
namespace {

using engine::ParallelAxis;

constexpr ParallelAxis kAxes[] = {ParallelAxis::tp, ParallelAxis::dp, ParallelAxis::pp};

TEST_F(MpiTest, EachAxisReducesAndGathersAmongItsClosedFormMembers) {
  const engine::Topology topo(world(), 2, 2);
  auto groups = engine::make_group_communicators(comm(), topo);
  for (ParallelAxis a : kAxes) {
    Communicator& g = groups.of(a);
    const std::vector<int> members = topo.group(a, rank());
    EXPECT_EQ(g.world_size(), int(members.size())) << engine::axis_name(a);
    // Its rank is this rank's place along the axis.
    const engine::TopologyCoords c = topo.coords(rank());
    const int index = a == ParallelAxis::tp ? c.tp : a == ParallelAxis::dp ? c.dp : c.pp;
    EXPECT_EQ(g.rank(), index) << engine::axis_name(a);
    // 2^world_rank summed over the group is a bit mask of exactly its members.
    float mask = float(1 << rank());
    g.all_reduce(&mask, 1, DType::f32, ReduceOp::sum);
    int want = 0;
    for (int m : members) want |= 1 << m;
    EXPECT_EQ(int(mask), want) << engine::axis_name(a);
    std::vector<float> all(members.size(), -1.0f);
    const float mine = float(rank());
    g.all_gather(&mine, all.data(), std::vector<size_t>(members.size(), 1), DType::f32);
    for (size_t i = 0; i < members.size(); ++i)
      EXPECT_EQ(int(all[i]), members[i]) << engine::axis_name(a) << " slot " << i;
  }
}

TEST_F(MpiTest, GroupRecordsCarryTheGroupSizeAndInterleaveWithTheWorld) {
  const engine::Topology topo(world(), 2, 2);
  auto groups = engine::make_group_communicators(comm(), topo);
  std::vector<CommRecord> seen;
  std::mutex mu;
  groups.tp->set_observer([&](const CommRecord& r) {
    std::lock_guard lock(mu);
    seen.push_back(r);
  });
  const auto before = comm().counters();
  // Issued without waiting, world and group alternately: one queue keeps the order.
  std::vector<float> w(16, 1.0f), t(16, 1.0f);
  auto h1 = groups.tp->all_reduce_async(t.data(), t.size(), DType::f32, ReduceOp::sum);
  auto h2 = comm().all_reduce_async(w.data(), w.size(), DType::f32, ReduceOp::sum);
  auto h3 = groups.tp->all_reduce_async(t.data(), t.size(), DType::f32, ReduceOp::sum);
  h1->wait(), h2->wait(), h3->wait();
  EXPECT_EQ(w[0], float(world()));
  EXPECT_EQ(t[0], 4.0f);  // twice over a group of 2
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& r : seen) {
    EXPECT_EQ(r.world_size, 2);
    EXPECT_EQ(r.bytes, 64u);
  }
  // The world counted its own call only.
  EXPECT_EQ(comm().counters().calls[0] - before.calls[0], 1u);
  EXPECT_EQ(groups.tp->counters().calls[0], 2u);
}

// A group's link class comes from its own ranks' hosts, not the world's: on
// one host every group is intra-host; on 2 hosts x 4 ranks (tests/cluster)
// tp and dp groups stay on one host and pp groups cross. Rank 0 prints them.
TEST_F(MpiTest, GroupLinkClassesFollowTheirOwnRanksHosts) {
  const engine::Topology topo(world(), 2, 2);
  auto groups = engine::make_group_communicators(comm(), topo);
  const auto& hosts = comm().placement().host_of_rank;
  for (ParallelAxis a : kAxes) {
    bool across = false;
    for (int m : topo.group(a, rank())) across |= hosts.at(size_t(m)) != hosts.at(size_t(rank()));
    const auto want = across ? profiler::LinkClass::inter_host : profiler::LinkClass::intra_host;
    EXPECT_EQ(groups.of(a).placement().link(), want) << engine::axis_name(a);
    if (rank() == 0)
      std::printf("group link: %s %s\n", engine::axis_name(a),
                  std::string(profiler::link_name(groups.of(a).placement().link())).c_str());
  }
}

TEST_F(MpiTest, SplitRefusesANegativeColorOnTheCallingRank) {
  EXPECT_THROW(comm().split(-1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::test

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 300); }
