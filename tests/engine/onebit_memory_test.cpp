// The 1-bit optimizers' error feedback in the memory model: hybrid-train on 1
// and 2 ranks (mpirun), compressing after step 2, measures per category (the
// tracking allocator's peaks) exactly what it predicts, and the prediction's
// optimizer bytes are the moments plus, on 2 ranks, the closed form of the
// errors: per compressed buffer of n values, padded to P (a multiple of
// W·lcm(W, 8) = 16), P worker and P/2 server floats; on 1 rank none.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/model/registry.h"
#include "engine/zero/partition.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

// Width 24: the layer norms' and biases' 24 values pad to 32.
nlohmann::json onebit_patch(const std::string& type) {
  const char* freeze = type == "ZeroOneAdam" ? "var_freeze_step" : "freeze_step";
  return {{"optimizer", {{"type", type}, {"params", {{"lr", 1e-3}, {freeze, 2}}}}},
          {"hybrid", {{"model", {{"n_embd", 24}, {"n_head", 2}}}}}};
}

uint64_t padded16(uint64_t n) { return (n + 15) / 16 * 16; }

// The errors' bytes on 2 ranks, by the closed form above.
uint64_t error_bytes_on_two_ranks(const std::string& type, const engine::Config& cfg) {
  const auto model = engine::make_model(cfg.model, cfg.padded_vocab());
  engine::ModuleTree tree(*model);
  uint64_t floats = 0;
  if (type == "OneBitLamb") {
    const uint64_t p = padded16(uint64_t(tree.param_count()));
    floats = p + p / 2;
  } else {
    for (const engine::ParamSpec* s : tree.params()) {
      const uint64_t p = padded16(uint64_t(s->numel));
      floats += p + p / 2;
    }
  }
  return 4 * floats;
}

TEST(OneBitMemory, ErrorBuffersArePredictedAsMeasuredOnOneAndTwoRanks) {
  test::TempDir dir;
  for (const std::string type : {"OneBitAdam", "ZeroOneAdam", "OneBitLamb"}) {
    const int moments = type == "OneBitAdam" ? 2 : 3;  // m, v (+ accumulator / fresh variance)
    for (int ranks : {1, 2}) {
      const std::string where = fmt::format("{} on {} rank(s)", type, ranks);
      const auto run = test::run_hybrid_train(dir, fmt::format("{}{}", type, ranks), ranks,
                                              onebit_patch(type), "--steps 6 --quiet");
      ASSERT_EQ(run.exit_code, 0) << where << ": " << run.output;
      const auto& peak = run.result.at("peak_memory_bytes");
      const auto& pred = run.result.at("predicted_memory_bytes");
      for (auto it = pred.begin(); it != pred.end(); ++it)
        EXPECT_EQ(peak.at(it.key()), it.value()) << where << ", " << it.key();
      const engine::Config cfg = test::tiny_config(onebit_patch(type), ranks);
      const auto model = engine::make_model(cfg.model, cfg.padded_vocab());
      const engine::ModuleTree tree(*model);
      const uint64_t state = uint64_t(moments) * 4 *
                             uint64_t(engine::Partition(tree.param_count(), ranks, 0).padded());
      const uint64_t errors = ranks == 1 ? 0 : error_bytes_on_two_ranks(type, cfg);
      EXPECT_EQ(pred.at("optimizer").get<uint64_t>(), state + errors) << where;
      std::printf("%s: optimizer %llu bytes predicted and measured (errors %llu)\n", where.c_str(),
                  (unsigned long long)peak.at("optimizer").get<uint64_t>(),
                  (unsigned long long)errors);
    }
  }
}

}  // namespace
}  // namespace hybrid
