// The machine's name and CPU, as recorded with runs, probes and benchmarks.
#include "base/host.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace hybrid::base {
namespace {

using ::testing::ElementsAre;

TEST(Host, ParsesTheFirstProcessorOfCpuinfo) {
  const char* text =
      "processor\t: 0\n"
      "vendor_id\t: AuthenticAMD\n"
      "model name\t: AMD EPYC 7B13\n"
      "flags\t\t: fpu sse4_2 avx f16c fma avx2 hypervisor sha_ni\n"
      "\n"
      "processor\t: 1\n"
      "model name\t: Something Else\n"
      "flags\t\t: fpu avx512f\n";
  const CpuInfo info = parse_cpuinfo(text);
  EXPECT_EQ(info.model, "AMD EPYC 7B13");
  EXPECT_THAT(info.flags, ElementsAre("avx", "avx2", "f16c", "fma", "hypervisor", "sse4_2"));
}

TEST(Host, ReportsAvx512AndArmFeatures) {
  CpuInfo info = parse_cpuinfo(
      "model name : Intel Xeon\nflags : avx2 avx512f avx512bw avx512_bf16 amx_tile\n");
  EXPECT_THAT(info.flags, ElementsAre("amx_tile", "avx2", "avx512_bf16", "avx512bw", "avx512f"));
  info = parse_cpuinfo("processor : 0\nFeatures : fp asimd sve\nModel : Neoverse\n");
  EXPECT_EQ(info.model, "Neoverse");
  EXPECT_THAT(info.flags, ElementsAre("asimd", "sve"));
}

TEST(Host, ReadsThisMachine) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(host_name(), name);
  // read_cpu_info reads the same file this test reads independently.
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  const CpuInfo expected = parse_cpuinfo(text.str()), cpu = read_cpu_info();
  EXPECT_EQ(cpu.model, expected.model);
  EXPECT_EQ(cpu.flags, expected.flags);
  if (text.str().find("model name") != std::string::npos) {
    EXPECT_FALSE(cpu.model.empty());
  }
}

}  // namespace
}  // namespace hybrid::base
