// The memory model with pipeline and tensor parallelism, held to what real
// `mpirun` processes of hybrid-train allocate: for 2 and 4 stages (with and
// without data parallelism, ZeRO 0 and 1, both partition methods, checkpointed
// blocks, fewer micro-batches than stages) and tensor parallelism (alone, with
// stages, with ZeRO 2) every rank's measured peak per category,
// as the run store records it, equals the model's prediction for that rank's
// stage, byte for byte; and predict_memory is the stage with the largest total.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "engine/memory_model.h"
#include "engine_test_util.h"
#include "kernels/ops.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

struct Case {
  const char* name;
  int stages, dp, gas;
  nlohmann::json extra;
  int tp = 1;
};

nlohmann::json pipe_patch(const Case& c) {
  nlohmann::json p = {
      {"gradient_accumulation_steps", c.gas},
      {"pipeline", {{"stages", c.stages}}},
      {"tensor_model_parallel_size", c.tp},
      {"hybrid", {{"model", {{"n_layer", 4}}}}},
  };
  if (!c.extra.is_null()) p.merge_patch(c.extra);
  return p;
}

int category(const std::string& name) {
  for (int c = 0; c < engine::kMemCategoryCount; ++c)
    if (engine::mem_category_name(engine::MemCategory(c)) == name) return c;
  return -1;
}

TEST(PipelineMemory, EveryRanksPeakPerCategoryEqualsTheModelForItsStage) {
  test::TempDir dir;
  const auto cpu = kernels::make_cpu_backend();
  const Case cases[] = {
      {"pp2", 2, 1, 4, {}},
      {"pp4", 4, 1, 4, {}},
      {"pp4_gas2", 4, 1, 2, {}},
      {"pp2_uniform_checkpointed",
       2,
       1,
       3,
       {{"pipeline", {{"partition", "uniform"}, {"activation_checkpoint_interval", 1}}}}},
      {"pp2_dp2_zero1", 2, 2, 2, {{"zero_optimization", {{"stage", 1}}}}},
      {"tp2", 1, 1, 2, {}, 2},
      {"tp2_pp2_zero1_checkpointed",
       2,
       1,
       2,
       {{"zero_optimization", {{"stage", 1}}},
        {"pipeline", {{"activation_checkpoint_interval", 1}}}},
       2},
      {"tp2_dp2_zero2", 1, 2, 2, {{"zero_optimization", {{"stage", 2}}}}, 2},
  };
  for (const auto& c : cases) {
    const int ranks = c.stages * c.dp * c.tp;
    const std::string db = dir / (std::string(c.name) + ".db");
    const auto run =
        test::run_hybrid_train(dir, c.name, ranks, pipe_patch(c), "--quiet --steps 2 --db " + db);
    ASSERT_EQ(run.exit_code, 0) << c.name << "\n" << run.output;
    profiler::RunStore store(db, profiler::OpenMode::read_only);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u) << c.name;
    const Config cfg = test::tiny_config(pipe_patch(c), ranks);
    // Rank r is stage r / (dp · tp) (tensor-parallel, then data-parallel
    // indices vary fastest); every tp rank's pieces are alike.
    std::map<int, int> rows_per_rank;
    for (const auto& row : store.memory(runs[0].id)) {
      if (row.category.find('.') != std::string::npos) continue;  // host.* / nvme.*
      ++rows_per_rank[row.rank];
      const int stage = row.rank / (c.dp * c.tp);
      const auto pred = engine::predict_stage_memory(cfg, ranks, stage, *cpu);
      const auto cat = category(row.category);
      ASSERT_GE(cat, 0) << row.category;
      EXPECT_EQ(row.peak_bytes, pred.bytes[size_t(cat)])
          << c.name << ", rank " << row.rank << " (stage " << stage << "), " << row.category;
      EXPECT_EQ(row.predicted_bytes.value_or(0), pred.bytes[size_t(cat)])
          << c.name << ", rank " << row.rank;
    }
    EXPECT_EQ(int(rows_per_rank.size()), ranks) << c.name;
    // The peak rank: stage 0 holds the most activation sets and the embedding.
    const auto peak = engine::predict_memory(cfg, ranks, *cpu);
    uint64_t most = 0;
    for (int s = 0; s < c.stages; ++s)
      most = std::max(most, engine::predict_stage_memory(cfg, ranks, s, *cpu).total());
    EXPECT_EQ(peak.total(), most) << c.name;
    std::printf("%s: predicted peak rank %s\n", c.name, peak.to_string().c_str());
  }
}

TEST(PipelineMemory, StagesThatDoNotDivideTheRanksAreRefusedNamingTheKey) {
  const Config cfg = test::tiny_config(
      {{"pipeline", {{"stages", 2}}}, {"hybrid", {{"model", {{"n_layer", 4}}}}}}, 2);
  try {
    (void)engine::predict_memory(cfg, 3, uint64_t(0));
    FAIL() << "3 ranks in 2 stages were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline.stages 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hybrid
