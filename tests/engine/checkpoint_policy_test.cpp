// Checkpoints the DeepSpeed way, with real files: tags and `latest`, resuming
// hybrid-train from `latest` or a named tag bit for bit, full and
// optimizer-state checkpoints on their own intervals, keep-last-k deleting only
// the policy's old tags, a crash mid-save leaving `latest` alone, and a negative
// interval refused with the key named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/save_policy.h"
#include "engine/engine.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

namespace fs = std::filesystem;
using engine::SavePolicy;

std::string latest_of(const std::string& dir) {
  std::ifstream in(dir + "/latest");
  std::string tag;
  std::getline(in, tag);
  return tag;
}

std::vector<std::string> tags_in(const std::string& dir) {
  std::vector<std::string> tags;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) tags.push_back(e.path().filename().string());
  std::sort(tags.begin(), tags.end());
  return tags;
}

TEST(SavePolicy, IntervalsKindsAndOverrides) {
  engine::CheckpointConfig c;
  c.dir = "ckpt";
  c.interval = 4;
  c.optimizer_interval = 2;
  const SavePolicy p(c, "", 0);
  EXPECT_EQ(p.dir(), "ckpt");
  const SavePolicy::Kind want[] = {SavePolicy::Kind::none, SavePolicy::Kind::optimizer,
                                   SavePolicy::Kind::none, SavePolicy::Kind::full,
                                   SavePolicy::Kind::none, SavePolicy::Kind::optimizer,
                                   SavePolicy::Kind::none, SavePolicy::Kind::full};
  for (int s = 1; s <= 8; ++s) EXPECT_EQ(p.at_step(s), want[s - 1]) << "step " << s;
  EXPECT_EQ(p.at_end(8), SavePolicy::Kind::none) << "step 8 saved already";
  EXPECT_EQ(p.at_end(9), SavePolicy::Kind::optimizer) << "the end always has a checkpoint";
  // --save and --save-every win over the config.
  const SavePolicy q(c, "other", 3);
  EXPECT_EQ(q.dir(), "other");
  EXPECT_EQ(q.at_step(3), SavePolicy::Kind::optimizer);
  EXPECT_EQ(q.at_step(2), SavePolicy::Kind::none);
  EXPECT_EQ(SavePolicy::tag(120), "step000120");
  // Intervals without a directory: nothing saved, and a warning says so.
  engine::CheckpointConfig no_dir;
  no_dir.interval = 5;
  const SavePolicy r(no_dir, "", 0);
  EXPECT_FALSE(r.enabled());
  EXPECT_EQ(r.at_step(5), SavePolicy::Kind::none);
  EXPECT_NE(r.warning().find("no checkpoint directory"), std::string::npos);
  EXPECT_EQ(p.warning(), "");
}

// One micro-step a step (the tiny config), on tokens that change with the step.
std::vector<float> run_steps(Engine& e, int steps) {
  return test::train_steps(e, steps, [&](int, auto& in, auto& tgt) {
    const size_t step = size_t(e.global_step()), vocab = size_t(e.config().model.vocab_size);
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = int32_t((i * 7 + step * 3) % vocab);
      tgt[i] = int32_t((i * 5 + step) % vocab);
    }
  });
}

TEST(Checkpoint, DefaultTagFullCheckpointAndSaveLatest) {
  test::TempDir dir;
  const auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  run_steps(*e, 3);
  EXPECT_EQ(e->save_checkpoint(dir.path().string()), "global_step3");  // DeepSpeed's default
  EXPECT_EQ(latest_of(dir.path()), "global_step3");
  EXPECT_FALSE(fs::exists(dir / "global_step3/model.bin")) << "optimizer-state checkpoint";
  run_steps(*e, 1);
  CheckpointSaveOptions full;
  full.full = true;
  full.save_latest = false;
  e->save_checkpoint(dir.path().string(), "best", full);
  EXPECT_EQ(latest_of(dir.path()), "global_step3") << "save_latest false leaves latest";
  // model.bin holds every fp32 weight, in llm.c's format.
  const auto w = engine::read_llmc_checkpoint(dir / "best/model.bin");
  std::vector<float> flat;
  engine::gpt2_from_llmc(test::gpt2_of(*e), e->module_tree(), w, flat);
  EXPECT_EQ(flat, e->gather_parameters());
  const auto meta = test::read_json(dir / "best/meta.json");
  EXPECT_EQ(meta.at("kind"), "full");
  EXPECT_EQ(meta.at("model_file"), "model.bin");
}

TEST(Checkpoint, KeepLastDeletesOnlyThePolicysOldTagsOfOneKind) {
  test::TempDir dir;
  const std::string d = dir.path();
  const auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  CheckpointSaveOptions full;
  full.full = true;
  for (int s = 1; s <= 6; ++s) {
    run_steps(*e, 1);
    e->save_checkpoint(d, SavePolicy::tag(s), s % 3 == 0 ? full : CheckpointSaveOptions{});
  }
  e->save_checkpoint(d, "best");               // a user's tag: never the policy's to delete
  fs::create_directories(dir / "step000007");  // incomplete (no meta.json): left alone
  // Unpublished and older than latest (a save or a deletion killed midway): dead, deleted.
  fs::create_directories(dir / "step000000");
  std::ofstream(dir / ("step000000/" + engine::partition_file_name(0))) << "half";
  std::ofstream(dir / "notes.txt") << "keep me";  // not a tag
  e->save_checkpoint(d, SavePolicy::tag(6));      // latest is step000006 again
  const auto deleted = engine::prune_checkpoints(d, "optimizer", 2, SavePolicy::managed_tags(),
                                                 e->checkpoint_owner());
  // Optimizer-state tags: 1, 2, 4, 5 and 6 (latest, re-saved as optimizer-state) → keep 6, 5.
  EXPECT_EQ(deleted,
            (std::vector<std::string>{"step000000", "step000004", "step000002", "step000001"}));
  EXPECT_EQ(tags_in(d), (std::vector<std::string>{"best", "step000003", "step000005", "step000006",
                                                  "step000007"}));
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_EQ(latest_of(d), "step000006");
  // Full tags: 3 only (6 was re-saved as optimizer-state); keep 1 deletes nothing.
  EXPECT_TRUE(
      engine::prune_checkpoints(d, "full", 1, SavePolicy::managed_tags(), e->checkpoint_owner())
          .empty());
  EXPECT_TRUE(engine::prune_checkpoints(d, "optimizer", 0, SavePolicy::managed_tags(),
                                        e->checkpoint_owner())
                  .empty())
      << "keep 0 keeps everything";
}

// ---- hybrid-train end to end ------------------------------------------------------

using Run = test::TrainRun;

using test::losses;

const nlohmann::json kPatch = {{"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}}}}},
                               {"fp16", {{"enabled", true}, {"initial_scale_power", 12}}},
                               {"gradient_accumulation_steps", 2}};

TEST(CheckpointPolicy, IntervalsKeepLastAndExactResumeFromLatestOrATag) {
  test::TempDir dir;
  const std::string ckpt = dir / "ckpt";
  const auto full = test::run_hybrid_train_alone(dir, "full", kPatch, "--quiet --steps 16");
  ASSERT_EQ(full.exit_code, 0) << full.output;

  nlohmann::json policy = kPatch;
  policy["hybrid"] = {
      {"checkpoint",
       {{"dir", ckpt}, {"interval", 4}, {"optimizer_interval", 2}, {"keep_last", 2}}}};
  const auto first = test::run_hybrid_train_alone(dir, "first", policy, "--steps 10");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  // Full at 4 and 8 (both kept), optimizer-state at 2, 6, 10 (2 deleted).
  EXPECT_EQ(tags_in(ckpt),
            (std::vector<std::string>{"step000004", "step000006", "step000008", "step000010"}));
  EXPECT_NE(first.output.find("deleted checkpoint " + ckpt + "/step000002 (keep_last 2)"),
            std::string::npos)
      << first.output;
  EXPECT_EQ(latest_of(ckpt), "step000010");
  for (const char* tag : {"step000004", "step000008"})
    EXPECT_TRUE(fs::exists(fs::path(ckpt) / tag / "model.bin")) << tag;
  for (const char* tag : {"step000006", "step000010"})
    EXPECT_FALSE(fs::exists(fs::path(ckpt) / tag / "model.bin")) << tag;
  const auto a = losses(full);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(losses(first)[i], a[i]) << "saving changes nothing";

  const auto from_latest =
      test::run_hybrid_train_alone(dir, "latest", kPatch, "--quiet --steps 6 --load " + ckpt);
  ASSERT_EQ(from_latest.exit_code, 0) << from_latest.output;
  EXPECT_EQ(from_latest.result.at("global_step"), 16);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(losses(from_latest)[i], a[10 + i]) << "step " << 11 + i;

  const auto from_tag = test::run_hybrid_train_alone(
      dir, "tag", kPatch, "--quiet --steps 4 --load " + ckpt + " --tag step000004");
  ASSERT_EQ(from_tag.exit_code, 0) << from_tag.output;
  EXPECT_EQ(from_tag.result.at("global_step"), 8);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(losses(from_tag)[i], a[4 + i]) << "step " << 5 + i;
}

TEST(CheckpointPolicy, ACrashMidSaveNeverMovesLatest) {
  test::TempDir dir;
  const std::string ckpt = dir / "ckpt";
  const auto full = test::run_hybrid_train_alone(dir, "full", kPatch, "--quiet --steps 8");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  // SIGKILL inside step 6's checkpoint, after its partition is written.
  const auto killed = test::run_hybrid_train_alone(
      dir, "killed", kPatch,
      "--quiet --steps 8 --save " + ckpt + " --save-every 2 --kill-mid-save 6");
  EXPECT_NE(killed.exit_code, 0);
  EXPECT_EQ(latest_of(ckpt), "step000004");
  EXPECT_TRUE(fs::exists(fs::path(ckpt) / "step000006" / engine::partition_file_name(0)))
      << "the crash came after the partition file";
  EXPECT_FALSE(fs::exists(fs::path(ckpt) / "step000006/meta.json"));
  const auto resumed =
      test::run_hybrid_train_alone(dir, "resumed", kPatch, "--quiet --steps 4 --load " + ckpt);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.result.at("global_step"), 8);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(losses(resumed)[i], losses(full)[4 + i]);
  // Loading the half-written tag by name is a clear error.
  const auto bad = test::run_hybrid_train_alone(
      dir, "bad", kPatch, "--quiet --steps 1 --load " + ckpt + " --tag step000006");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("meta.json missing (incomplete checkpoint)"), std::string::npos)
      << bad.output;
}

TEST(CheckpointPolicy, NegativeIntervalIsRefusedWithTheKey) {
  test::TempDir dir;
  nlohmann::json p = kPatch;
  p["hybrid"] = {{"checkpoint", {{"optimizer_interval", -100}}}};
  const auto r = test::run_hybrid_train_alone(dir, "neg", p, "--quiet --steps 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // a config error
  EXPECT_NE(r.output.find("config: hybrid.checkpoint.optimizer_interval must be a non-negative "
                          "integer (0: none), got -100"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace hybrid
