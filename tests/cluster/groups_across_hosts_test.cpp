// 3D-parallel group communicators across test hosts: the 8-rank group test
// binary (tests/mpi/groups_np8_mpi_test.cpp) on 2 hosts x 4 ranks, where the
// tp and dp groups of pp 2 x dp 2 x tp 2 stay on one host and the pp groups
// cross: every group still reduces among its closed-form members over TCP,
// and each books its link class from its own ranks' hosts.
#include <gtest/gtest.h>

#include "tests/cluster/test_cluster.h"
#include "tests/engine/engine_test_util.h"

namespace hybrid {
namespace {

TEST(GroupsAcrossHosts, PipelineGroupsCrossHostsTensorAndDataGroupsDoNot) {
  test::TempDir dir;
  test::TestCluster cluster(2);
  HYBRID_REQUIRE_CLUSTER(cluster);
  const auto r = test::run_command(cluster.mpirun(dir.path(), 8, 4) + HYBRID_BINARY_DIR +
                                   "/tests/groups_np8_mpi_test");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("group link: tp intra_host"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("group link: dp intra_host"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("group link: pp inter_host"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace hybrid
