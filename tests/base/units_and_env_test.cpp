// Units (one format for every tool), the launcher's environment, and typed JSON reads.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "base/json_read.h"
#include "base/launcher_env.h"
#include "base/text.h"
#include "base/units.h"

namespace hybrid::base {
namespace {

TEST(Units, OneFormatPerKindOfNumber) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(uint64_t(3) << 29), "1.50 GiB");
  EXPECT_EQ(format_ms(12.345), "12.35 ms");
  EXPECT_EQ(format_ms(0.0421), "0.042 ms");
  EXPECT_EQ(format_ms(1234.5), "1234.5 ms");
  EXPECT_EQ(format_duration(0.85), "850.0 ms");
  EXPECT_EQ(format_duration(125), "2m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_count(124.44e6), "124.44 M");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_flop_rate(152.3e12), "152.30 TFLOP/s");
  EXPECT_EQ(format_flop(3.7e12), "3.70 TFLOP");
  EXPECT_EQ(format_percent(0.123), "12.30%");
  EXPECT_EQ(format_percent(NAN), "-");
  EXPECT_EQ(format_gbps(12.345), "12.35 GB/s");
}

// The digit after the last one shown rounds (what the profiler's reports print).
TEST(Units, RoundAtTheLastDigitShown) {
  EXPECT_EQ(format_ms(1234.56), "1234.6 ms");
  EXPECT_EQ(format_count(124'439'808), "124.44 M");
  EXPECT_EQ(format_flop_rate(1.5232e14), "152.32 TFLOP/s");
  EXPECT_EQ(format_flop_rate(999), "999.00 FLOP/s");
  EXPECT_EQ(format_percent(0.12345), "12.35%");
}

// Sets variables for one test and restores the environment after it.
struct Env {
  using Vars = std::initializer_list<std::pair<const char*, const char*>>;
  explicit Env(Vars vars = {}) { set(vars); }
  std::vector<std::string> names;
  void set(Vars vars) {
    for (const auto& [n, v] : vars) set(n, v);
  }
  void set(const char* n, const char* v) {
    ::setenv(n, v, 1);
    names.emplace_back(n);
  }
  ~Env() {
    for (const auto& n : names) ::unsetenv(n.c_str());
  }
};

void clear_launcher_vars() {
  for (const char* v :
       {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_STEP_ID",
        "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
        "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    ::unsetenv(v);
}

TEST(Text, ContainsIgnoringCase) {
  EXPECT_TRUE(contains_ignore_case("ncclKernel_AllReduce", "NCCL"));
  EXPECT_TRUE(contains_ignore_case("## Backward ##", "backward"));
  EXPECT_FALSE(contains_ignore_case("gemm", "nccl"));
  EXPECT_FALSE(contains_ignore_case("ncc", "nccl"));
}

TEST(Text, TrimsBlanksAtBothEndsOnly) {
  EXPECT_EQ(trim(" \tmodel name : Xeon \r"), "model name : Xeon");
  EXPECT_EQ(trim("a b"), "a b");
  EXPECT_EQ(trim(" \t\r "), "");
  EXPECT_EQ(trim("\nx\n"), "\nx\n");  // newlines are the caller's line splitting
}

// Numbers are the whole text or nothing: no silent 0 for "abc", no "12" from "12x".
TEST(Text, ParsesWholeNumbersOnly) {
  EXPECT_EQ(parse_int("12"), 12);
  EXPECT_EQ(parse_int("-3"), -3);
  for (const char* bad : {"", "abc", "12x", " 12", "1.5", "0x10", "99999999999999999999"})
    EXPECT_EQ(parse_int(bad), std::nullopt) << bad;
  EXPECT_EQ(parse_double("1.5e3"), 1500.0);
  EXPECT_EQ(parse_double("-0.25"), -0.25);
  for (const char* bad : {"", "1.5MB", "one", "1,5"}) EXPECT_EQ(parse_double(bad), std::nullopt);
}

TEST(LauncherEnv, OpenMpiHydraAndSlurm) {
  clear_launcher_vars();
  EXPECT_EQ(launcher_env().world_size, 1);
  {
    const Env e({{"OMPI_COMM_WORLD_RANK", "3"},
                 {"OMPI_COMM_WORLD_SIZE", "4"},
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    const auto l = launcher_env();
    EXPECT_EQ(l.rank, 3);
    EXPECT_EQ(l.world_size, 4);
    EXPECT_EQ(l.local_rank, 1);
    EXPECT_EQ(l.local_size, 2);
  }
  {
    Env e;  // an sbatch script's own shell: SLURM_NTASKS is the allocation, not a world
    e.set("SLURM_NTASKS", "8");
    EXPECT_EQ(launcher_env().world_size, 1);
    e.set({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "5"}, {"SLURM_NTASKS_PER_NODE", "2(x4)"}});
    const auto l = launcher_env();
    EXPECT_EQ(l.world_size, 8);
    EXPECT_EQ(l.rank, 5);
    EXPECT_EQ(l.local_size, 2);
  }
  {
    Env e;
    e.set("PMI_SIZE", "zero");
    try {
      launcher_env();
      FAIL() << "no error";
    } catch (const std::runtime_error& err) {
      EXPECT_NE(std::string(err.what()).find("PMI_SIZE='zero'"), std::string::npos) << err.what();
    }
  }
}

TEST(JsonRead, PathsAndTypedReadsNameTheKey) {
  const auto j = nlohmann::json::parse(
      R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8}, "bf16": {"enabled": true}})");
  EXPECT_EQ(number_at(j, "zero_optimization.stage"), 2.0);
  EXPECT_EQ(boolean_at(j, "bf16.enabled"), true);
  EXPECT_EQ(boolean_at(j, "fp16.enabled"), std::nullopt);
  EXPECT_EQ(string_at(j, "bf16.enabled"), std::nullopt);  // wrong type: not read
  EXPECT_EQ(at_path(j, {"zero_optimization", "stage", "deeper"}), nullptr);
  EXPECT_EQ(json_integer(*at_dotted(j, "zero_optimization.reduce_bucket_size"), "config",
                         "reduce_bucket_size", 1, INT64_MAX),
            500000000);
  try {
    json_integer(j["bf16"]["enabled"], "space", "bf16.enabled", 0, 3);
    FAIL() << "no error";
  } catch (const JsonReadError& e) {
    EXPECT_STREQ(e.what(), "space: bf16.enabled must be an integer in 0..3, got true");
  }
}

}  // namespace
}  // namespace hybrid::base
