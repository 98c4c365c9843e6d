// Placement: the host of each rank, as a multi-host communicator gathers it.
#include "engine/comm/placement.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/host.h"

namespace hybrid::engine::comm {
namespace {

TEST(Placement, LocalRanksCountOnlyEarlierRanksOfTheSameHost) {
  const Placement p{{"a", "b", "a", "b", "b"}, {}};
  EXPECT_EQ(p.hosts(), 2);
  EXPECT_EQ(p.link(), profiler::LinkClass::inter_host);
  const int local_rank[] = {0, 0, 1, 1, 2};
  const int local_size[] = {2, 3, 2, 3, 3};
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(p.local_rank(r), local_rank[r]) << "rank " << r;
    EXPECT_EQ(p.local_size(r), local_size[r]) << "rank " << r;
  }
  EXPECT_THROW(p.local_rank(5), std::out_of_range);
  EXPECT_THROW(p.local_size(-1), std::out_of_range);
}

TEST(Placement, OneHostIsIntraHostAndUnnamedHostsAreOne) {
  const Placement one{{"a", "a", "a"}, {}};
  EXPECT_EQ(one.hosts(), 1);
  EXPECT_EQ(one.link(), profiler::LinkClass::intra_host);
  const Placement none;
  EXPECT_EQ(none.hosts(), 1);
  EXPECT_EQ(none.link(), profiler::LinkClass::intra_host);
  EXPECT_EQ(none.local_rank(3), 0);
  EXPECT_EQ(none.local_size(3), 1);
}

TEST(Placement, DescribesHostsInOrderOfTheirFirstRankWithRanges) {
  EXPECT_EQ((Placement{{"n1", "n1", "n2", "n2"}, {}}.describe()),
            "2 hosts: n1 ranks 0-1, n2 ranks 2-3");
  EXPECT_EQ((Placement{{"n2", "n1", "n2", "n1", "n2"}, {}}.describe()),
            "2 hosts: n2 ranks 0,2,4, n1 ranks 1,3");
  EXPECT_EQ((Placement{{"n1", "n1", "n2", "n1"}, {}}.describe()),
            "2 hosts: n1 ranks 0-1,3, n2 rank 2");
  EXPECT_EQ((Placement{{"solo"}, {}}.describe()), "1 host: solo rank 0");
}

// Network namespaces of one kernel (the test hosts) have their own host names
// but one machine; ranks on other machines cannot share the store's WAL index.
// A group's placement (MPI and NCCL groups alike): its members' hosts and
// machines in group rank order, so a tp group inside one host of a two-host
// world is intra_host; unnamed stays unnamed; a rank past the named ones throws.
TEST(Placement, OfRanksKeepsTheMembersHostsInGroupOrder) {
  Placement world;
  world.host_of_rank = {"a", "a", "b", "b"};
  world.machine_of_rank = {"m1", "m1", "m2", "m2"};
  const Placement tp = world.of_ranks({2, 3});
  EXPECT_EQ(tp.host_of_rank, (std::vector<std::string>{"b", "b"}));
  EXPECT_EQ(tp.machine_of_rank, (std::vector<std::string>{"m2", "m2"}));
  EXPECT_EQ(tp.link(), profiler::LinkClass::intra_host);
  const Placement pp = world.of_ranks({3, 0});
  EXPECT_EQ(pp.host_of_rank, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(pp.link(), profiler::LinkClass::inter_host);
  EXPECT_FALSE(pp.same_host(0, 1));
  EXPECT_TRUE(Placement{}.of_ranks({0, 5}).host_of_rank.empty());
  EXPECT_THROW(world.of_ranks({4}), std::out_of_range);
}

TEST(Placement, SameMachineByMachineIdNotHostName) {
  const Placement p{{"node1", "node2", "node3"}, {"boot-a", "boot-a", "boot-b"}};
  EXPECT_TRUE(p.same_machine(0, 1));
  EXPECT_FALSE(p.same_machine(0, 2));
  EXPECT_TRUE(Placement{}.same_machine(0, 5));  // nothing gathered: one machine
  EXPECT_THROW(p.same_machine(0, 3), std::out_of_range);
}

TEST(Placement, MachineIdIsTheKernelsBootIdOrTheOverride) {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  ASSERT_FALSE(boot.empty()) << "Linux has /proc/sys/kernel/random/boot_id";
  EXPECT_EQ(base::machine_id(), boot);
  ::setenv("HYBRID_MACHINE_ID", "elsewhere", 1);
  EXPECT_EQ(base::machine_id(), "elsewhere");
  ::unsetenv("HYBRID_MACHINE_ID");
}

}  // namespace
}  // namespace hybrid::engine::comm
