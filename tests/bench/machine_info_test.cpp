// The machine description recorded with every run.
#include "bench/compare/machine_info.h"

#include <gtest/gtest.h>

#include <regex>

namespace hybrid::bench {
namespace {

TEST(MachineInfo, DescribesThisMachine) {
  nlohmann::json m = describe_machine(HYBRID_SOURCE_DIR);
  for (const char* key : {"cpu_model", "logical_cpus", "cpu_flags", "avx512", "openblas_coretype",
                          "hostname", "date", "git_revision", "git_dirty", "kernel"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_GE(m["logical_cpus"].get<int>(), 1);
  EXPECT_TRUE(std::regex_match(m["date"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  if (coretype) {
    EXPECT_EQ(m["openblas_coretype"], coretype);
  } else {
    EXPECT_TRUE(m["openblas_coretype"].is_null());
  }
  // The source tree is a git checkout: its revision is a 40-digit hash.
  ASSERT_TRUE(m["git_revision"].is_string());
  EXPECT_TRUE(std::regex_match(m["git_revision"].get<std::string>(), std::regex("[0-9a-f]{40}")));
}

}  // namespace
}  // namespace hybrid::bench
