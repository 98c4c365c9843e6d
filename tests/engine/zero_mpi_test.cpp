// ZeRO across real `mpirun` processes running hybrid-train: every stage at 1, 2
// and 4 ranks ends with the single-process run's fp32 master weights; the
// bytes each stage communicates match ZeRO's theory; measured peaks match the
// memory model at every world size.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/model/gpt2/gpt2.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine/zero/partition.h"
#include "engine_test_util.h"
#include "kernels/ops.h"

namespace hybrid {
namespace {

constexpr int kSteps = 10;

struct RunOutput {
  std::vector<float> weights;
  nlohmann::json result;
};

// Trains with `ranks` processes; the global batch is micro × gas × ranks.
RunOutput train(const test::TempDir& dir, const std::string& name, int ranks,
                const nlohmann::json& patch) {
  const std::string cfg = dir / (name + ".json"), out = dir / (name + ".bin"),
                    res = dir / (name + ".result.json");
  test::write_json(cfg, test::tiny_config_json(patch));
  const auto r = test::run_command(
      test::launcher(ranks) + test::tool("hybrid-train") + " --quiet --config " + cfg +
      " --steps " + std::to_string(kSteps) + " --export-llmc " + out + " --result " + res);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  RunOutput o;
  if (r.exit_code != 0) return o;
  o.result = test::read_json(res);
  const auto w = engine::read_llmc_checkpoint(out);
  for (auto* t : w.tensors()) o.weights.insert(o.weights.end(), t->begin(), t->end());
  return o;
}

nlohmann::json zero_patch(int stage, int gas,
                          const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json p = {{"gradient_accumulation_steps", gas},
                      {"zero_optimization",
                       {{"stage", stage},
                        {"overlap_comm", true},
                        {"reduce_bucket_size", 3000},
                        {"allgather_bucket_size", 5000},
                        {"stage3_param_persistence_threshold", 200},
                        {"stage3_prefetch_bucket_size", 4000}}}};
  p.merge_patch(test::kAdamForComparedRuns);
  p.merge_patch(extra);
  return p;
}

TEST(ZeroMpi, EveryStageAndWorldSizeMatchesTheSingleProcessRun) {
  test::TempDir dir;
  // Reference: one process, same micro batch, accumulation × 4 = the same samples per step.
  const auto ref = train(dir, "ref", 1, zero_patch(0, 4));
  ASSERT_FALSE(ref.weights.empty());
  for (int ranks : {1, 2, 4}) {
    for (int stage : {0, 1, 2, 3}) {
      const auto run =
          train(dir, fmt::format("s{}w{}", stage, ranks), ranks, zero_patch(stage, 4 / ranks));
      ASSERT_EQ(run.weights.size(), ref.weights.size())
          << "stage " << stage << ", " << ranks << " ranks";
      const double rel = test::max_relative_difference(run.weights, ref.weights);
      EXPECT_LT(rel, 1e-5) << "stage " << stage << ", " << ranks << " ranks";
      std::printf("stage %d, %d rank(s): max |Δw| / max |w| = %.2e after %d steps\n", stage, ranks,
                  rel, kSteps);
      const auto losses = run.result.at("losses").get<std::vector<double>>();
      const auto ref_losses = ref.result.at("losses").get<std::vector<double>>();
      EXPECT_NEAR(losses.back(), ref_losses.back(), 1e-4)
          << "stage " << stage << ", " << ranks << " ranks";
    }
  }
}

// Lamb's trust ratio is per parameter tensor. ZeRO cuts the flat space into
// equal shards, so tensors straddle ranks; their norms are summed over ranks
// before the update. The ratio of two norms barely depends on how much of a
// homogeneous tensor it is measured over, so the starting weights make each
// straddling tensor's part before a shard boundary 8× larger than the rest:
// per-shard norms would then give the two parts very different ratios and the
// weights would leave the single-process run's by far more than 1e-5.
TEST(ZeroMpi, LambMatchesTheSingleProcessRunWhenZeroSplitsTensors) {
  test::TempDir dir;
  const nlohmann::json lamb = {
      {"optimizer",
       {{"type", "Lamb"}, {"params", {{"lr", 5e-3}, {"weight_decay", 0.01}, {"max_coeff", 0.5}}}}}};
  const auto cfg = test::tiny_config(lamb);
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  auto flat = e->gather_parameters();
  int straddling = 0;
  for (int ranks : {2, 4}) {
    const engine::Partition part(e->param_count(), ranks, 0);
    for (const auto* p : e->module_tree().params())
      for (int r = 1; r < ranks; ++r) {
        const int64_t cut = part.shard(r).begin;
        if (p->offset < cut && p->offset + p->numel > cut) {
          ++straddling;
          for (int64_t i = p->offset; i < cut; ++i) flat[size_t(i)] *= 8.0f;
        }
      }
  }
  ASSERT_GE(straddling, 2) << "shard boundaries cut tensors at 2 and 4 ranks";
  engine::Gpt2Weights w;
  engine::gpt2_to_llmc(test::gpt2_of(*e), e->module_tree(), flat, w);
  engine::write_llmc_checkpoint(dir / "start.bin", w);
  nlohmann::json start = lamb;
  start["hybrid"] = {{"init_from", dir / "start.bin"}};

  const auto ref = train(dir, "lamb_ref", 1, zero_patch(0, 4, start));
  ASSERT_FALSE(ref.weights.empty());
  for (const auto& [ranks, stage] : {std::pair{2, 1}, std::pair{2, 3}, std::pair{4, 2}}) {
    const auto run = train(dir, fmt::format("lamb_s{}w{}", stage, ranks), ranks,
                           zero_patch(stage, 4 / ranks, start));
    ASSERT_EQ(run.weights.size(), ref.weights.size());
    const double rel = test::max_relative_difference(run.weights, ref.weights);
    EXPECT_LT(rel, 1e-5) << "Lamb, stage " << stage << ", " << ranks << " ranks";
    std::printf("Lamb, stage %d, %d ranks: max |Δw| / max |w| = %.2e\n", stage, ranks, rel);
  }
  // The offloaded optimizer runs the same two passes chunk by chunk: the same bits.
  nlohmann::json off = zero_patch(2, 2, start);
  const auto on_device = train(dir, "lamb_s2w2", 2, off);
  off["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  const auto offloaded = train(dir, "lamb_s2w2_off", 2, off);
  EXPECT_EQ(offloaded.weights, on_device.weights);
}

// Theory of one step's message bytes per stage (gas = 1), in nccl-tests' message
// sizes, from the model's flat layout: N parameters (P padded), d bytes each.
struct Theory {
  double all_reduce = 0, reduce_scatter = 0, all_gather = 0;
};

Theory zero_theory(const engine::Config& cfg, int ranks) {
  engine::GPT2 model(cfg.model, cfg.padded_vocab());
  engine::ModuleTree tree(model);
  const double N = double(tree.param_count());
  const double P = std::ceil(N / ranks) * ranks;
  const double d = double(kernels::dtype_size(cfg.param_dtype()));
  const double scalars = ranks > 1 ? 4.0 : 0.0;  // the loss average
  Theory t;
  switch (cfg.zero.stage) {
    case 0:
      t.all_reduce = N * d + scalars;
      break;  // gradients, once
    case 1:
    case 2:
      t.reduce_scatter = N * d;    // gradients (the padding is never reduced)
      t.all_gather = P * d;        // updated parameters
      t.all_reduce = 8 + scalars;  // norm and overflow
      break;
    case 3: {
      // Each unit is gathered for every module that uses it, forward and
      // backward; the tied embedding is gathered again for lm_head. Persistent
      // (small) units are refreshed once per step instead.
      double gathered = 0, persistent = 0;
      for (auto* m : tree.param_modules()) {
        const double n = double(tree.own_range(*m).size());
        if (n < cfg.zero.stage3_param_persistence_threshold)
          persistent += n;
        else
          gathered += n;
      }
      const double tied = double(model.embedding->wte()->numel + model.embedding->wpe()->numel);
      t.all_gather = (2 * (gathered + tied) + persistent) * d;
      t.reduce_scatter = N * d;
      t.all_reduce = 8 + scalars;
      break;
    }
  }
  return t;
}

TEST(ZeroMpi, CommunicationVolumeAndMemoryMatchTheory) {
  test::TempDir dir;
  double bytes_stage2 = 0, bytes_stage3 = 0;
  for (int ranks : {2, 4}) {
    for (int stage : {0, 1, 2, 3}) {
      const auto patch = zero_patch(stage, 1);
      const auto run = train(dir, fmt::format("v{}w{}", stage, ranks), ranks, patch);
      ASSERT_FALSE(run.weights.empty());
      const auto theory = zero_theory(test::tiny_config(patch, ranks), ranks);
      const auto& c = run.result.at("comm_bytes_per_step");
      const double ar = c.at("all_reduce"), rs = c.at("reduce_scatter"), ag = c.at("all_gather");
      const std::string where =
          "stage " + std::to_string(stage) + ", " + std::to_string(ranks) + " ranks";
      EXPECT_NEAR(ar, theory.all_reduce, 0.05 * theory.all_reduce + 1e-9) << where;
      EXPECT_NEAR(rs, theory.reduce_scatter, 0.05 * theory.reduce_scatter + 1e-9) << where;
      EXPECT_NEAR(ag, theory.all_gather, 0.05 * theory.all_gather + 1e-9) << where;
      std::printf(
          "%s: all-reduce %.0f B, reduce-scatter %.0f B, all-gather %.0f B per step (theory %.0f / "
          "%.0f / %.0f)\n",
          where.c_str(), ar, rs, ag, theory.all_reduce, theory.reduce_scatter, theory.all_gather);
      if (ranks == 2 && stage == 2) bytes_stage2 = ar + rs + ag;
      if (ranks == 2 && stage == 3) bytes_stage3 = ar + rs + ag;

      // Memory per category, every rank alike: measured peak within 10 % of the model.
      const auto& peak = run.result.at("peak_memory_bytes");
      const auto& pred = run.result.at("predicted_memory_bytes");
      for (auto it = peak.begin(); it != peak.end(); ++it) {
        const double m = it.value().get<double>(), p = pred.at(it.key()).get<double>();
        EXPECT_NEAR(p, m, 0.10 * std::max(m, 1.0)) << where << ", " << it.key();
      }
    }
  }
  std::printf(
      "stage 3 / stage 2 bytes per step: %.2f (1.5 plus the tied embedding's second gather)\n",
      bytes_stage3 / bytes_stage2);
  EXPECT_GT(bytes_stage3 / bytes_stage2, 1.45);
}

TEST(ZeroMpi, MemoryBudgetBelowTheNeedFailsNamingTheCategory) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json",
                   test::tiny_config_json({{"zero_optimization", {{"stage", 2}}},
                                           {"hybrid", {{"memory_budget", "300KiB"}}}}));
  const auto r =
      test::run_command(test::launcher(2) + test::tool("hybrid-train") + " --quiet --config " +
                        (dir / "cfg.json") + " --steps 2 --result " + (dir / "r.json"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const auto res = test::read_json(dir / "r.json");
  EXPECT_EQ(res.at("status"), "oom");
  const std::string msg = res.at("error").at("message");
  // The memory model's check, before anything is allocated (the allocator's own
  // "out of memory: allocating ..." comes second: TrackingAllocator tests).
  EXPECT_NE(msg.find("out of memory: the memory model predicts"), std::string::npos) << msg;
  EXPECT_NE(msg.find("budget of 300.00 KiB"), std::string::npos) << msg;
  EXPECT_TRUE(
      std::regex_search(msg, std::regex(" for (params|grads|master|optimizer|activations|comm) ")))
      << "the message names the category: " << msg;
}

}  // namespace
}  // namespace hybrid
