// Test hosts for the cluster tests: scripts/testcluster.sh brings up N network
// namespaces (hyb-node1..N) for the life of a TestCluster and takes them down
// after. Tests skip, saying why, where namespaces cannot be created. CTest runs
// these tests one at a time (RESOURCE_LOCK testcluster): the hosts are global.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/common/run_command.h"

namespace hybrid::test {

class TestCluster {
 public:
  // `options`: as for `testcluster.sh up`, e.g. "--rate 1gbit".
  explicit TestCluster(int hosts, const std::string& options = "") : hosts_(hosts) {
    const auto r = run_command(script() + " up " + std::to_string(hosts) + " " + options);
    if (r.exit_code == 2) {
      why_ = r.output;
      return;
    }
    up_ = r.exit_code == 0;
    if (!up_) why_ = "testcluster.sh up failed: " + r.output;
    const auto env = run_command(script() + " env");
    std::istringstream lines(env.output);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("export ", 0) == 0) env_ += line.substr(7) + " ";
  }
  ~TestCluster() {
    if (up_) run_command(script() + " down");
  }
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  bool up() const { return up_; }
  const std::string& why() const { return why_; }
  int hosts() const { return hosts_; }

  // "env <Open MPI settings for the hosts> mpirun --hostfile F -np N " with
  // `per_host` slots on each host, ranks filling a host before the next.
  std::string mpirun(const std::filesystem::path& dir, int ranks, int per_host) const {
    const auto file = dir / ("hostfile_" + std::to_string(per_host));
    std::ofstream(file) << run_command(script() + " hostfile " + std::to_string(per_host)).output;
    return "env " + env_ + HYBRID_MPIEXEC + " --hostfile " + file.string() + " -np " +
           std::to_string(ranks) + " ";
  }
  // The Open MPI settings alone ("K=V K=V ").
  const std::string& env() const { return env_; }

  static std::string script() { return std::string(HYBRID_SOURCE_DIR) + "/scripts/testcluster.sh"; }

 private:
  int hosts_ = 0;
  bool up_ = false;
  std::string why_;
  std::string env_;
};

}  // namespace hybrid::test

// Skips the test where this machine cannot make namespaces; fails it when the
// script itself failed.
#define HYBRID_REQUIRE_CLUSTER(cluster)                                                         \
  do {                                                                                          \
    if (!(cluster).up()) {                                                                      \
      if ((cluster).why().rfind("testcluster.sh up failed", 0) == 0) FAIL() << (cluster).why(); \
      GTEST_SKIP() << "no test cluster on this machine: " << (cluster).why();                   \
    }                                                                                           \
  } while (0)
