// scripts/testcluster.sh itself: bad options are refused naming the value
// before anything is made, and `--delay` starts one delay line per host
// (scripts/delay-line.cpp) that `down` takes away with the hosts' links. What
// the delay does to traffic is measured by ProbeAcrossHosts.
#include <gtest/gtest.h>

#include <string>

#include "tests/cluster/test_cluster.h"

namespace hybrid::test {
namespace {

int delay_lines_running() {
  const auto r = run_command("pgrep -c -x hyb-delay-line");
  return r.exit_code == 0 ? std::stoi(r.output) : 0;
}

TEST(TestClusterScript, BadOptionsAreRefusedNamingTheValueBeforeAnythingIsMade) {
  struct Bad {
    std::string args, named;
  };
  for (const Bad& b :
       {Bad{"up 2 --delay 1s", "--delay 1s"}, Bad{"up 2 --delay soon", "--delay soon"},
        Bad{"up 2 --rate fast", "--rate fast"}, Bad{"up 0", "'0'"},
        Bad{"up 2 --jitter 1ms", "unknown option --jitter"}}) {
    const auto r = run_command(TestCluster::script() + " " + b.args);
    EXPECT_EQ(r.exit_code, 1) << b.args << ": " << r.output;
    EXPECT_NE(r.output.find(b.named), std::string::npos) << b.args << ": " << r.output;
  }
  const auto status = run_command(TestCluster::script() + " status");
  EXPECT_EQ(status.output, "down\n");
  EXPECT_EQ(delay_lines_running(), 0);
}

TEST(TestClusterScript, DelayStartsALinePerHostThatDownTakesAway) {
  {
    TestCluster cluster(2, "--delay 1ms");
    HYBRID_REQUIRE_CLUSTER(cluster);
    EXPECT_EQ(delay_lines_running(), 2);
    // The host's eth0 is the delay line's TAP device, at the jumbo MTU.
    const auto link = run_command("ip -n hyb-node1 link show eth0");
    EXPECT_NE(link.output.find("mtu 9000"), std::string::npos) << link.output;
    EXPECT_EQ(run_command("ip link show hyb-veth2").exit_code, 0);
  }
  EXPECT_EQ(delay_lines_running(), 0);
  EXPECT_NE(run_command("ip link show hyb-veth2 2>&1").exit_code, 0);
  EXPECT_EQ(run_command(TestCluster::script() + " status").output, "down\n");
}

}  // namespace
}  // namespace hybrid::test
