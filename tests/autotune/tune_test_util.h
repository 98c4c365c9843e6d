// Shared helpers of the autotuner tests: a tiny GPT-2 config, temporary
// directories, the real binaries of this build, and running commands.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "autotune/candidate.h"
#include "autotune/cluster_rates.h"
#include "tests/common/json_file.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/common/tiny_gpt2.h"

namespace hybrid::autotune::test {

// A GPT-2 small enough for a step in milliseconds; `patch` is merged over it.
inline nlohmann::json tiny_config(const nlohmann::json& patch = nlohmann::json::object()) {
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", 1},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-3}}}}},
      {"steps_per_print", 1000},
      {"hybrid",
       {{"model", hybrid::test::tiny_gpt2_model()},
        {"data", "synthetic"},
        {"threads", 1},
        {"seed", 7}}},
  };
  j.merge_patch(patch);
  return j;
}

using hybrid::test::read_json;
using hybrid::test::TempDir;
using hybrid::test::write_json;

// Enumerating for `n` ranks, the other options at their defaults.
inline EnumerateOptions world(int n) {
  EnumerateOptions o;
  o.world_size = n;
  return o;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every collective (point-to-point too) at exactly 1 GB/s, GEMMs at 10 GFLOP/s:
// rates whose costs the layout tests write in closed form.
inline ClusterRates linear_rates(int world) {
  ClusterRates r = default_rates(kernels::BackendKind::cpu, world);
  r.bandwidth.clear();
  for (const char* op : {"all_reduce", "reduce_scatter", "all_gather", "send"})
    for (uint64_t b : {uint64_t(1), uint64_t(1) << 30}) r.bandwidth.push_back({op, b, 1.0, 1.0});
  r.gemm_flops_per_s = 1e10;
  return r;
}

inline std::string tune_bin() { return std::string(HYBRID_BINARY_DIR) + "/autotune/hybrid-tune"; }
inline std::string train_bin() { return std::string(HYBRID_BINARY_DIR) + "/engine/hybrid-train"; }
inline std::string data_dir() { return std::string(HYBRID_SOURCE_DIR) + "/tests/autotune/data"; }

// How many times slower the tools run in a sanitizer build (scripts/sanitize.sh,
// ASan with full malloc stacks or TSan): a trial deadline is stretched by this
// factor there, so that the test checks the timeout's handling, not the speed.
inline int sanitizer_slowdown() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 5;
#else
  return 1;
#endif
}

using hybrid::test::CommandResult;
using hybrid::test::run_command;

}  // namespace hybrid::autotune::test
