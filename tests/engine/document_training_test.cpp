// Training on documents (hybrid.data.packing, dynamic batching) through
// hybrid-train: every step within the token budget, the learning rate scaled
// by each step's batch size as DeepSpeed's scale_lr says, the documents read
// over several epochs, and a run killed mid-way resuming bit for bit from its
// checkpoint's data position (2 ranks; 1 rank with the same samples per step).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "engine/data/token_shard.h"
#include "engine_test_util.h"

namespace hybrid::test {
namespace {

// `count` documents of 2 to 30 tokens each (ids 1..63 from an LCG), each
// preceded by the separator 0, as one llm.c shard.
std::string write_documents(const TempDir& dir, int count, uint32_t seed,
                            const std::string& name = "documents.bin") {
  std::vector<uint16_t> tokens;
  uint32_t x = seed;
  const auto next = [&] { return (x = x * 1664525u + 1013904223u) >> 8; };
  for (int d = 0; d < count; ++d) {
    tokens.push_back(0);
    const int length = 2 + int(next() % 29);
    for (int i = 0; i < length; ++i) tokens.push_back(uint16_t(1 + next() % 63));
  }
  const std::string path = dir / name;
  engine::write_token_shard(path, tokens);
  return path;
}

// Two rows of 16 a micro-batch, up to 24 real tokens and 4 documents in it;
// a constant learning rate 1e-3.
nlohmann::json dynamic_patch(const std::string& shard, const std::string& scaling, int gas = 1) {
  return {
      {"train_micro_batch_size_per_gpu", 2},
      {"gradient_accumulation_steps", gas},
      {"hybrid",
       {{"data",
         {{"train", shard},
          {"dynamic_batching",
           {{"enabled", true}, {"max_tokens", 24}, {"max_batch", 4}, {"lr_scaling", scaling}}}}}}}};
}

TEST(DocumentTraining, EveryStepWithinTheBudgetWithTheLearningRateScaledByItsBatch) {
  const TempDir dir;
  const std::string shard = write_documents(dir, 60, 3);
  for (const std::string scaling : {"linear", "sqrt", "none"}) {
    const auto run =
        run_hybrid_train_alone(dir, scaling, dynamic_patch(shard, scaling), "--quiet --steps 12");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto& batches = run.result.at("batches");
    ASSERT_EQ(batches.size(), 12u) << scaling;
    std::set<int64_t> sizes;
    for (const auto& b : batches) {
      const int64_t n = b.at("sequences").get<int64_t>();
      sizes.insert(n);
      EXPECT_LE(b.at("tokens").get<int64_t>(), 24) << scaling << ": the step's one micro-batch";
      EXPECT_GE(n, 1);
      EXPECT_LE(n, 4) << "max_batch";
      EXPECT_EQ(b.at("tokens").get<int64_t>() + b.at("padding").get<int64_t>(), 32)
          << "a micro-batch's 2 rows of 16";
      // train_batch_size 2 is the batch the base learning rate 1e-3 is for.
      const double ratio = double(n) / 2.0;
      const double want = scaling == "linear" ? 1e-3 * ratio
                          : scaling == "sqrt" ? 1e-3 * std::sqrt(ratio)
                                              : 1e-3;
      EXPECT_NEAR(b.at("lr").get<double>(), want, 1e-9) << scaling << ", " << n << " documents";
    }
    EXPECT_GT(sizes.size(), 1u) << "batch sizes that differ between steps";
  }
}

// 12 documents make an epoch of a few steps: the 8 steps cross epochs, each
// read in its own shuffled order.
TEST(DocumentTraining, KilledRunResumesFromItsDataPositionBitForBit) {
  const TempDir dir;
  const std::string shard = write_documents(dir, 12, 5);
  const auto patch = dynamic_patch(shard, "linear");
  const auto full = run_hybrid_train(dir, "full", 2, patch, "--quiet --steps 8");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  expect_killed_run_resumes(dir, 2, patch, dynamic_patch(shard, "linear", 2), full);
}

// Packing alone (no budget): rows filled with whole documents; a checkpoint
// of other data refuses to resume there, naming the position.
TEST(DocumentTraining, PackedRowsTrainAndAForeignPositionIsRefused) {
  const TempDir dir;
  const std::string shard = write_documents(dir, 200, 9);
  const nlohmann::json patch = {{"hybrid", {{"data", {{"train", shard}, {"packing", true}}}}}};
  const std::string ckpt = dir / "ckpt";
  const auto run =
      run_hybrid_train_alone(dir, "packed", patch, "--quiet --steps 30 --save " + ckpt);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto losses = run.result.at("losses").get<std::vector<double>>();
  EXPECT_LT(losses.back(), losses.front()) << "packed documents train";
  for (const auto& b : run.result.at("batches")) EXPECT_LE(b.at("tokens").get<int64_t>(), 32);
  const std::string other = write_documents(dir, 4, 11, "other.bin");
  const nlohmann::json small = {{"hybrid", {{"data", {{"train", other}, {"packing", true}}}}}};
  const auto resumed =
      run_hybrid_train_alone(dir, "foreign", small, "--quiet --steps 1 --load " + ckpt);
  EXPECT_NE(resumed.exit_code, 0);
  EXPECT_NE(resumed.output.find("the checkpoint's data position (epoch 0, step 30)"),
            std::string::npos)
      << resumed.output;
}

// Packed documents under the other layouts: a 2-stage pipeline (positions on
// every stage, the loss over the last stage's real targets) and tensor
// parallelism (every tp rank the same rows) train as one process does.
TEST(DocumentTraining, PipelineAndTensorParallelTrainAsOneProcess) {
  const TempDir dir;
  const std::string shard = write_documents(dir, 80, 17);
  nlohmann::json base = dynamic_patch(shard, "sqrt", 2);
  base.merge_patch(kAdamForComparedRuns);
  base.merge_patch({{"hybrid", {{"model", {{"n_layer", 2}}}}}});
  const auto one = run_hybrid_train(dir, "one", 1, base, "--quiet --steps 6");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  for (const nlohmann::json& layout : {nlohmann::json{{"pipeline", {{"stages", 2}}}},
                                       nlohmann::json{{"tensor_model_parallel_size", 2}}}) {
    nlohmann::json patch = base;
    patch.merge_patch(layout);
    const auto two = run_hybrid_train(dir, "two", 2, patch, "--quiet --steps 6");
    ASSERT_EQ(two.exit_code, 0) << layout << two.output;
    EXPECT_EQ(two.result.at("world_size"), 2) << layout;
    const auto a = losses(one), b = losses(two);
    ASSERT_EQ(b.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(b[i], a[i], 1e-5) << layout << " step " << i + 1;
    EXPECT_EQ(two.result.at("batches"), one.result.at("batches")) << layout;
  }
}

// Validation packs its documents as training does: with the training stream as
// the validation one, in stream order and with the learning rate 0, the
// validation loss after step 1 is step 1's training loss, bit for bit.
TEST(DocumentTraining, ValidationPacksDocumentsAsTrainingDoes) {
  const TempDir dir;
  const std::string shard = write_documents(dir, 50, 13);
  const nlohmann::json patch = {{"optimizer", {{"params", {{"lr", 0.0}}}}},
                                {"hybrid",
                                 {{"data",
                                   {{"train", shard},
                                    {"val", shard},
                                    {"packing", true},
                                    {"shuffle", false},
                                    {"val_every", 1},
                                    {"val_batches", 1}}}}}};
  const auto run = run_hybrid_train_alone(dir, "val", patch, "--quiet --steps 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto& val = run.result.at("val_losses");
  ASSERT_EQ(val.size(), 2u);
  const double first = losses(run)[0];
  EXPECT_NEAR(val[0].at("loss").get<double>(), first, 1e-6 * first);
  EXPECT_GT(std::abs(losses(run)[1] - first), 1e-4) << "step 2 reads other documents";
}

}  // namespace
}  // namespace hybrid::test
