// A Llama end to end through the tools: hybrid-tune sweeps the shipped example
// (results/examples/llama-small-cpu.json) as real hybrid-train trials, and the
// viewer's layer breakdown of every ok trial shows the Llama's layers (its
// blocks' norms, qkv projection, rotary positions, attention, SwiGLU) with the
// FLOPs of their own formulas.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "gui/model/database.h"
#include "gui/model/layer_breakdown.h"
#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

TEST(LlamaSweep, TuneSweepsTheExampleAndTheViewerShowsItsLayers) {
  namespace fs = std::filesystem;
  const fs::path bin = HYBRID_BINARY_DIR,
                 dir = fs::temp_directory_path() /
                       ("hybrid_llama_sweep." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "space.json")
      << R"({"train_micro_batch_size_per_gpu": [1, 2], "zero_optimization": {"stage": [0, 1]}})";
  const auto r = test::run_command(
      (bin / "autotune" / "hybrid-tune").string() + " --config " + HYBRID_SOURCE_DIR +
      "/results/examples/llama-small-cpu.json --space " + (dir / "space.json").string() +
      " --nprocs 1 --strategy grid --steps 4 --start-step 2 --no-probe --early-stop 0 --db " +
      (dir / "tune.db").string() + " --out " + (dir / "best.json").string());
  ASSERT_EQ(r.status, 0) << r.output;
  Database db((dir / "tune.db").string());
  ASSERT_TRUE(db.is_open()) << db.error();
  ASSERT_EQ(db.sweeps().size(), 1u);
  int ok = 0;
  for (const auto& trial : db.trials(db.sweeps()[0].id)) {
    ASSERT_EQ(trial.status, profiler::TrialStatus::ok) << trial.key << ": " << trial.reason;
    ASSERT_TRUE(trial.run_id);
    const auto data = db.load_run(*trial.run_id);
    ASSERT_TRUE(data.has_value()) << db.error();
    const LayerBreakdown b = build_layer_breakdown(data->profile, data->events);
    std::map<std::string, const LayerRow*> rows;
    for (const auto& row : b.rows) rows[row.name] = &row;
    for (const auto& [name, type] :
         std::map<std::string, std::string>{{"h.0", "LlamaDecoderLayer"},
                                            {"h.1.input_layernorm", "RMSNorm"},
                                            {"h.1.self_attn.qkv_proj", "Linear"},
                                            {"h.1.self_attn.rope", "Rope"},
                                            {"h.1.self_attn.core", "AttentionCore"},
                                            {"h.1.mlp.act", "SwiGLU"},
                                            {"norm", "RMSNorm"}}) {
      ASSERT_TRUE(rows.count(name)) << trial.key << ": no row " << name;
      EXPECT_EQ(rows[name]->type, type) << name;
    }
    // qkv_proj: 2·B·T·C·(C + 2·kv) with C 128, 2 kv heads of 32, T 64.
    const int B = nlohmann::json::parse(trial.config_json)["train_micro_batch_size_per_gpu"];
    EXPECT_DOUBLE_EQ(rows["h.1.self_attn.qkv_proj"]->fwd_flops, 2.0 * B * 64 * 128 * (128 + 128))
        << trial.key;
    EXPECT_GT(rows["h.1.mlp.act"]->fwd_ms.mean, 0.0) << trial.key;
    ++ok;
  }
  EXPECT_EQ(ok, 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hybrid::gui
