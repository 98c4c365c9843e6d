// Recomputation in the profiler: a real hybrid-train run with activation
// checkpointing on blocks 0 and 2 of 3 writes events of category recompute for
// those blocks only, layer stats whose recompute columns hold the
// recomputation (its FLOPs: the block's forward without mlp.c_proj and the
// second residual add, exactly), a backward that no longer contains it, a flops
// report with a recompute section, the profile key's timing lines, and one
// warning for a key that has no effect here.
#include <gtest/gtest.h>

#include <map>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "profiler/flops.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

using profiler::Category;

TEST(CheckpointingProfile, RecomputeIsItsOwnCategoryInEventsLayerStatsAndReports) {
  test::TempDir dir;
  const nlohmann::json patch = {
      {"gradient_accumulation_steps", 2},
      {"flops_profiler", {{"enabled", true}, {"profile_step", 2}}},
      {"activation_checkpointing", {{"profile", true}, {"partition_activations", true}}},
      {"hybrid",
       {{"model", {{"n_layer", 3}}},
        {"activation_checkpointing", {{"every", 2}}},
        {"profiler", {{"trace", true}, {"trace_steps", 1}}}}}};
  const std::string cfg = dir / "cfg.json", db = dir / "runs.db";
  test::write_json(cfg, test::tiny_config_json(patch));
  const auto cmd = test::run_command(test::tool("hybrid-train") + " --config " + cfg + " --db " +
                                     db + " --steps 3");
  ASSERT_EQ(cmd.exit_code, 0) << cmd.output;
  EXPECT_NE(cmd.output.find("activation_checkpointing: 2 of 3 blocks (h.{0, 2})"),
            std::string::npos)
      << cmd.output;
  // A key that cannot act here is warned about once, naming it.
  const std::string warning =
      "config: warning: activation_checkpointing.partition_activations: no effect";
  const size_t at = cmd.output.find(warning);
  EXPECT_NE(at, std::string::npos) << cmd.output;
  EXPECT_EQ(cmd.output.find(warning, at + 1), std::string::npos) << "once";
  // profile: one line per optimizer step, 2 checkpointed blocks × 2 micro-steps.
  EXPECT_NE(cmd.output.find("activation_checkpointing.profile: step 3: 4 checkpointed block "
                            "forwards"),
            std::string::npos)
      << cmd.output;
  EXPECT_NE(cmd.output.find("recompute (activation checkpointing), per module"), std::string::npos)
      << cmd.output;

  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  const int64_t run = runs[0].id;
  std::map<std::string, int32_t> id;
  std::map<int32_t, std::string> name;
  for (const auto& m : store.modules(run)) id[m.name] = m.id, name[m.id] = m.name;
  std::map<int32_t, profiler::LayerStat> stat;
  for (const auto& l : store.layer_stats(run))
    if (l.step == 2) stat[l.module_id] = l;

  // Events: recompute scopes inside blocks 0 and 2 only.
  const auto events = store.events(run);
  size_t recompute_events = 0;
  for (const auto& e : events.events) {
    if (e.category != Category::recompute) continue;
    ++recompute_events;
    const std::string& n = name.at(e.module_id);
    EXPECT_TRUE(n.rfind("h.0", 0) == 0 || n.rfind("h.2", 0) == 0) << n;
    EXPECT_NE(n, "h.0.mlp.c_proj") << "its output is read by no backward";
  }
  // Per step: 2 micro-steps × 2 blocks × 10 boundaries (block, ln_1, attn (3), ln_2, mlp (2)).
  EXPECT_EQ(recompute_events, 40u);

  const int B = 2, T = 16, C = 32;
  const uint64_t residual = profiler::flops::residual_forward(int64_t(B) * T * C);
  uint64_t blocks_rc_flops = 0;
  int64_t blocks_rc_ns = 0;
  for (const std::string h : {"h.0", "h.1", "h.2"}) {
    const auto& s = stat.at(id.at(h));
    if (h == "h.1") {
      EXPECT_EQ(s.recompute_ns, 0) << h;
      EXPECT_EQ(s.recompute_flops, 0u) << h;
      continue;
    }
    // The forward again, less mlp.c_proj and the second residual add (2 micro-steps).
    const auto& proj = stat.at(id.at(h + ".mlp.c_proj"));
    EXPECT_EQ(s.recompute_flops, s.fwd_flops - proj.fwd_flops - 2 * residual) << h;
    EXPECT_GT(s.recompute_ns, 0) << h;
    EXPECT_GT(stat.at(id.at(h + ".mlp")).recompute_ns, 0) << h << ".mlp's own scope";
    EXPECT_EQ(proj.recompute_ns, 0) << h;
    blocks_rc_flops += s.recompute_flops;
    blocks_rc_ns += s.recompute_ns;
  }
  // The model: recomputation is all of its blocks', and its backward scope no
  // longer counts it (the scope's time = bwd + recompute).
  const auto& model = stat.at(id.at("model"));
  EXPECT_EQ(model.recompute_flops, blocks_rc_flops);
  EXPECT_EQ(model.recompute_ns, blocks_rc_ns);
  int64_t model_backward_scopes = 0;
  for (const auto& e : events.events)
    if (e.step == 2 && e.module_id == id.at("model") && e.category == Category::backward)
      model_backward_scopes += e.dur_ns;
  EXPECT_EQ(model.bwd_ns + model.recompute_ns, model_backward_scopes);
  EXPECT_EQ(model.host_recompute_ns, model.recompute_ns) << "the CPU: host time is the time";
}

}  // namespace
}  // namespace hybrid
