// Bad input that used to get through hybrid-train and hybrid-data (issue 32):
// each case runs the real tool on a tiny model and asserts the named error, the
// exit status and that nothing was trained, written or deleted before it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/divergence.h"
#include "engine_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

namespace fs = std::filesystem;

using Run = test::TrainRun;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string latest_of(const std::string& dir) {
  std::ifstream in(dir + "/latest");
  std::string tag;
  std::getline(in, tag);
  return tag;
}

const nlohmann::json kNHead4 = {{"hybrid", {{"model", {{"n_head", 4}}}}}};
const nlohmann::json kVocab100 = {{"hybrid", {{"model", {{"vocab_size", 100}}}}}};

// n_head and vocab_size (within the same padding) keep the parameter count:
// only the whole model configuration in meta.json tells them apart.
TEST(BadInput, LoadRefusesACheckpointOfAnotherModelNamingTheKey) {
  test::TempDir dir;
  const std::string ck = dir / "ck1";
  const auto base = test::run_hybrid_train_alone(dir, "base", {}, "--quiet --steps 2 --save " + ck);
  ASSERT_EQ(base.exit_code, 0) << base.output;
  const auto heads =
      test::run_hybrid_train_alone(dir, "heads", kNHead4, "--quiet --steps 2 --load " + ck);
  EXPECT_EQ(heads.exit_code, 1) << heads.output;
  EXPECT_TRUE(has(heads.output, "checkpoint " + ck +
                                    "/step000002 was saved for model.n_head 2, this config has 4"))
      << heads.output;
  EXPECT_EQ(heads.result.at("status"), "failed");
  const auto vocab =
      test::run_hybrid_train_alone(dir, "vocab", kVocab100, "--quiet --steps 2 --load " + ck);
  EXPECT_EQ(vocab.exit_code, 1) << vocab.output;
  EXPECT_TRUE(has(vocab.output, "was saved for model.vocab_size 64, this config has 100"))
      << vocab.output;
  // The same model still resumes.
  const auto same = test::run_hybrid_train_alone(dir, "same", {}, "--quiet --steps 1 --load " + ck);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_EQ(same.result.at("global_step"), 3);
}

// Model A left step000004 and step000005 (keep_last 2). Model B may not save
// there at all; a fresh run of model A (another lineage) may, and its keep_last
// rotates only its own tags.
TEST(BadInput, SavingIntoAFolderOfAnotherModelIsRefusedAndKeepLastSparesOtherRuns) {
  test::TempDir dir;
  const std::string ck = dir / "ck";
  const nlohmann::json keep2 = {{"hybrid", {{"checkpoint", {{"keep_last", 2}}}}}};
  const auto a = test::run_hybrid_train_alone(dir, "a", keep2,
                                              "--quiet --steps 5 --save-every 1 --save " + ck);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(entries(ck), (std::vector<std::string>{"latest", "step000004", "step000005"}));

  nlohmann::json b_patch = keep2;
  b_patch["hybrid"]["model"] = {{"n_layer", 3}};
  const auto b =
      test::run_hybrid_train_alone(dir, "b", b_patch, "--steps 3 --save-every 1 --save " + ck);
  EXPECT_EQ(b.exit_code, 2) << b.output;
  EXPECT_TRUE(has(b.output, "--save " + ck + ": checkpoint folder " + ck +
                                " holds checkpoints of another model (step00000"))
      << b.output;
  EXPECT_TRUE(has(b.output, "was saved for model.n_layer 2, this config has 3")) << b.output;
  EXPECT_FALSE(has(b.output, "step     1")) << "refused before training";
  EXPECT_EQ(b.result.at("status"), "config_error");
  EXPECT_EQ(entries(ck), (std::vector<std::string>{"latest", "step000004", "step000005"}));

  const auto c = test::run_hybrid_train_alone(dir, "c", keep2,
                                              "--quiet --steps 3 --save-every 1 --save " + ck);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(entries(ck), (std::vector<std::string>{"latest", "step000002", "step000003",
                                                   "step000004", "step000005"}))
      << "run c deleted its own step000001 only";
  EXPECT_EQ(latest_of(ck), "step000003");
}

TEST(BadInput, ADivergedRunHasItsOwnStatusExitCodeAndStoreRow) {
  test::TempDir dir;
  const std::string db = dir / "runs.db";
  const nlohmann::json huge_lr = {{"optimizer", {{"params", {{"lr", 1e30}}}}}};
  const auto r = test::run_hybrid_train_alone(
      dir, "lr", huge_lr,
      "--steps 4 --db " + db + " --save " + dir / "ck" + " --export-llmc " + dir / "lr.bin");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  // Weights whose loss is NaN are neither checkpointed nor exported: nothing
  // good is rotated out or overwritten for them.
  EXPECT_TRUE(has(r.output, "not saving step 4: its loss is")) << r.output;
  EXPECT_TRUE(has(r.output, "not exporting to")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir / "ck") / "step000004"));
  EXPECT_FALSE(std::filesystem::exists(dir / "lr.bin"));
  EXPECT_EQ(r.result.at("status"), "diverged") << r.result.dump();
  EXPECT_EQ(r.result.at("error").at("kind"), "Diverged");
  EXPECT_TRUE(has(r.output,
                  "hybrid-train: training diverged: the loss was NaN or infinite for "
                  "each of the last"))
      << r.output;
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(store.get_run(runs[0].id).status, profiler::RunStatus::diverged);
  // A sane learning rate is still ok.
  const auto ok = test::run_hybrid_train_alone(dir, "ok", {}, "--quiet --steps 2");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(ok.result.at("status"), "ok");
}

// A run resumed with a learning rate that blows up: its first step's loss is
// still finite (the weights before the update), so that step saves; the next
// loss is NaN, and keep_last 1 must not have rotated the last good checkpoint
// out for the one saved after the bad update.
TEST(BadInput, KeepLastRotatesOnlyOnceTheNextLossIsFinite) {
  test::TempDir dir;
  const std::string ck = dir / "ck";
  const nlohmann::json keep1 = {{"hybrid", {{"checkpoint", {{"keep_last", 1}}}}}};
  const auto good = test::run_hybrid_train_alone(dir, "good", keep1,
                                                 "--quiet --steps 2 --save-every 1 --save " + ck);
  ASSERT_EQ(good.exit_code, 0) << good.output;
  ASSERT_EQ(entries(ck), (std::vector<std::string>{"latest", "step000002"}));
  nlohmann::json blow_up = keep1;
  blow_up["optimizer"] = {{"params", {{"lr", 1e30}}}};
  const auto bad = test::run_hybrid_train_alone(
      dir, "bad", blow_up, "--steps 3 --save-every 1 --save " + ck + " --load " + ck);
  EXPECT_EQ(bad.exit_code, 4) << bad.output;
  EXPECT_TRUE(has(bad.output, "not saving step 4: its loss is")) << bad.output;
  EXPECT_EQ(entries(ck), (std::vector<std::string>{"latest", "step000002", "step000003"}))
      << "the good step000002 is kept beside the one saved after the bad update";
}

TEST(BadInput, DivergenceNeedsTheWholeWindow) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(divergence({}, {}), "");
  EXPECT_NE(divergence({3.0, inf, nan}, {false, true, true}), "")
      << "a short run: all its steps after the first (before any update)";
  EXPECT_NE(divergence({nan}, {true}), "") << "a one-step run: its step";
  EXPECT_EQ(divergence({3.0, nan, 3.0}, {true, true, false}), "") << "the last step is finite";
  std::vector<double> losses(12, 3.0);
  std::vector<bool> skipped(12, true);
  skipped[1] = false;
  EXPECT_NE(divergence(losses, skipped), "") << "the last 10 steps were all skipped";
  skipped[5] = false;
  EXPECT_EQ(divergence(losses, skipped), "");
  EXPECT_EQ(divergence({3.0, 3.0, 3.0}, {true, true, true}), "")
      << "fp16's first skips in a short run are the loss scale settling";
}

// A config far over its budget fails on the memory model's prediction, before
// any GEMM shape of it is measured or allocated.
TEST(BadInput, MemoryBudgetIsCheckedBeforeGemmMeasurement) {
  test::TempDir dir;
  for (const auto& patch : {
           nlohmann::json{
               {"hybrid", {{"memory_budget", "1GiB"}, {"model", {{"vocab_size", 34000000}}}}}},
           nlohmann::json{{"hybrid", {{"memory_budget", "1GiB"}}},
                          {"train_micro_batch_size_per_gpu", 100000000}},
       }) {
    const auto r = test::run_hybrid_train_alone(dir, "big", patch, "--steps 1");
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_TRUE(has(r.output, "out of memory: the memory model predicts")) << r.output;
    EXPECT_TRUE(has(r.output, "over its memory budget of 1.00 GiB, the most for ")) << r.output;
    EXPECT_TRUE(has(r.output, "; nothing was allocated (predicted: params ")) << r.output;
    EXPECT_FALSE(has(r.output, "gemm:")) << "no GEMM measured: " << r.output;
    EXPECT_EQ(r.result.at("status"), "oom");
  }
}

TEST(BadInput, OutputPathsAreCheckedBeforeTraining) {
  test::TempDir dir;
  const std::string file = dir / "afile";
  std::ofstream(file) << "not a folder";
  const auto save = test::run_hybrid_train_alone(dir, "save", {}, "--steps 2 --save " + file);
  EXPECT_EQ(save.exit_code, 2) << save.output;
  EXPECT_TRUE(has(save.output, "--save " + file + ": it exists and is not a directory"))
      << save.output;
  EXPECT_FALSE(has(save.output, "step     1")) << "refused before training: " << save.output;
  EXPECT_EQ(save.result.at("error").at("kind"), "ArgumentError");

  const auto exported = test::run_hybrid_train_alone(
      dir, "export", {}, "--steps 2 --export-llmc /proc/nope/model.bin");
  EXPECT_EQ(exported.exit_code, 2) << exported.output;
  EXPECT_TRUE(has(exported.output,
                  "--export-llmc /proc/nope/model.bin: its folder /proc/nope: cannot create it "
                  "in /proc"))
      << exported.output;
  EXPECT_FALSE(has(exported.output, "step     1")) << exported.output;

  const auto result =
      test::run_command(test::tool("hybrid-train") + " --config " + (dir / "save.json") +
                        " --steps 2 --result " + file + "/r.json");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_TRUE(has(result.output, "--result " + file + "/r.json: its folder " + file +
                                     ": it exists and is not a directory"))
      << result.output;
}

TEST(BadInput, CorruptMetaJsonNamesTheFileAndThePosition) {
  test::TempDir dir;
  const std::string ck = dir / "ck";
  ASSERT_EQ(test::run_hybrid_train_alone(dir, "a", {}, "--quiet --steps 1 --save " + ck).exit_code,
            0);
  std::ofstream(ck + "/step000001/meta.json") << "{\n  \"format\": oops\n}\n";
  const auto r = test::run_hybrid_train_alone(dir, "b", {}, "--quiet --steps 1 --load " + ck);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "checkpoint " + ck +
                                "/step000001: meta.json is not valid JSON: parse error at line 2, "
                                "column 13"))
      << r.output;
  EXPECT_FALSE(has(r.output, "[json.exception")) << r.output;
}

TEST(BadInput, SynthWithABadBranchingOrNoiseCreatesNothing) {
  test::TempDir dir;
  const std::string synth = test::tool("hybrid-data") + " synth --tokens 1000 --vocab 64 --out ";
  const auto branching = test::run_command(synth + (dir / "b") + " --branching 0");
  EXPECT_EQ(branching.exit_code, 1) << branching.output;
  EXPECT_TRUE(has(branching.output, "branching must be in 1..vocab_size (64), got 0"))
      << branching.output;
  EXPECT_FALSE(fs::exists(dir / "b"));
  const auto noise = test::run_command(synth + (dir / "n") + " --noise 2");
  EXPECT_EQ(noise.exit_code, 1) << noise.output;
  EXPECT_TRUE(has(noise.output, "noise must be in (0, 1], got 2")) << noise.output;
  EXPECT_FALSE(fs::exists(dir / "n"));
  // A count out of range is ours to word, with the tool's status (not CLI11's 105).
  const auto none = test::run_command(test::tool("hybrid-data") + " synth --tokens 0 --vocab 64 " +
                                      "--out " + dir / "z");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_TRUE(has(none.output, "--tokens: must be at least 1, got 0")) << none.output;
  EXPECT_FALSE(fs::exists(dir / "z"));
}

}  // namespace
}  // namespace hybrid
