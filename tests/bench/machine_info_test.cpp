// The machine description recorded with every run.
#include "bench/compare/machine_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

namespace hybrid::bench {
namespace {

using ::testing::ElementsAre;

TEST(MachineInfo, ParsesTheFirstProcessorOfCpuinfo) {
  const char* text =
      "processor\t: 0\n"
      "vendor_id\t: AuthenticAMD\n"
      "model name\t: AMD EPYC 7B13\n"
      "flags\t\t: fpu sse4_2 avx f16c fma avx2 hypervisor sha_ni\n"
      "\n"
      "processor\t: 1\n"
      "model name\t: Something Else\n"
      "flags\t\t: fpu avx512f\n";
  CpuInfo info = parse_cpuinfo(text);
  EXPECT_EQ(info.model, "AMD EPYC 7B13");
  EXPECT_THAT(info.flags, ElementsAre("avx", "avx2", "f16c", "fma", "hypervisor", "sse4_2"));
}

TEST(MachineInfo, ReportsAvx512) {
  CpuInfo info = parse_cpuinfo(
      "model name : Intel Xeon\nflags : avx2 avx512f avx512bw avx512_bf16 amx_tile\n");
  EXPECT_THAT(info.flags, ElementsAre("amx_tile", "avx2", "avx512_bf16", "avx512bw", "avx512f"));
}

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
