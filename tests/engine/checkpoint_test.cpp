// Checkpoints in one process: exact continuation, refusal of truncated and
// corrupt files with `latest` untouched, and the consolidation tool.
#include "engine/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/engine.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

namespace fs = std::filesystem;

using test::quiet;

std::vector<float> run_steps(Engine& e, int steps) {
  const auto& cfg = e.config();
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    const int64_t step = e.global_step();
    for (size_t i = 0; i < n; ++i) {
      in[i] = int32_t((i * 7 + size_t(step) * 3) % size_t(cfg.model.vocab_size));
      tgt[i] = int32_t((i * 7 + size_t(step) * 3 + 1) % size_t(cfg.model.vocab_size));
    }
    float l = 0;
    for (int k = 0; k < cfg.gradient_accumulation_steps; ++k) {
      l += e.forward(in, tgt);
      e.backward();
      e.step();
    }
    losses.push_back(l);
  }
  return losses;
}

TEST(Checkpoint, ResumeContinuesBitwise) {
  for (std::string dtype : {"fp32", "fp16", "bf16"}) {
    test::TempDir dir;
    nlohmann::json patch = {{"zero_optimization", {{"stage", 1}}}};
    if (dtype != "fp32") patch[dtype] = {{"enabled", true}};
    auto cfg = test::tiny_config(patch);
    auto a = initialize(cfg, make_model(cfg), quiet());
    const auto all = run_steps(*a, 6);

    auto b = initialize(cfg, make_model(cfg), quiet());
    run_steps(*b, 3);
    b->save_checkpoint(dir.path().string(), "mid");
    auto c = initialize(cfg, make_model(cfg), quiet());
    EXPECT_EQ(c->load_checkpoint(dir.path().string()), "mid");
    EXPECT_EQ(c->global_step(), 3);
    EXPECT_EQ(c->loss_scale(), b->loss_scale());
    const auto rest = run_steps(*c, 3);
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(rest[size_t(i)], all[size_t(3 + i)]) << dtype << " step " << 4 + i;
    EXPECT_EQ(c->gather_parameters(), a->gather_parameters()) << dtype;
  }
}

TEST(Checkpoint, TruncatedPartitionIsRefusedAndLatestStaysOnTheGoodOne) {
  test::TempDir dir;
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  run_steps(*e, 1);
  e->save_checkpoint(dir.path().string(), "good");
  run_steps(*e, 1);
  e->save_checkpoint(dir.path().string(), "bad");
  EXPECT_EQ(engine::resolve_checkpoint_tag(dir.path().string(), ""), "bad");

  // Truncate the newest checkpoint's partition, as a crash mid-copy would.
  const auto part = dir.path() / "bad" / engine::partition_file_name(0);
  fs::resize_file(part, fs::file_size(part) / 2);
  auto f = initialize(cfg, make_model(cfg), quiet());
  try {
    f->load_checkpoint(dir.path().string(), "bad");
    FAIL() << "expected a truncation error";
  } catch (const engine::CheckpointError& err) {
    EXPECT_NE(std::string(err.what()).find("truncated"), std::string::npos) << err.what();
  }
  EXPECT_EQ(f->global_step(), 0);  // nothing half-loaded
  EXPECT_EQ(f->load_checkpoint(dir.path().string(), "good"), "good");
  EXPECT_EQ(f->global_step(), 1);
}

TEST(Checkpoint, FailedSaveNeverMovesLatest) {
  test::TempDir dir;
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  run_steps(*e, 1);
  e->save_checkpoint(dir.path().string(), "first");
  // The tag's directory is a file: writing the partition fails.
  std::ofstream(dir / "second") << "in the way";
  EXPECT_THROW(e->save_checkpoint(dir.path().string(), "second"), std::exception);
  EXPECT_EQ(engine::resolve_checkpoint_tag(dir.path().string(), ""), "first");
}

TEST(Checkpoint, ASaveOverAnEarlierTagUnpublishesItBeforeReplacingItsFiles) {
  test::TempDir dir;
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  run_steps(*e, 1);
  e->save_checkpoint(dir.path().string(), "t");
  e->save_checkpoint(dir.path().string(), "other");  // latest moves past "t"
  run_steps(*e, 1);
  // The second save of "t" stops where a kill would, its files replaced.
  CheckpointSaveOptions cut_short;
  bool published_while_replaced = true;
  cut_short.before_publish = [&] {
    published_while_replaced = fs::exists(dir.path() / "t" / "meta.json");
    throw std::runtime_error("killed before publishing");
  };
  EXPECT_THROW(e->save_checkpoint(dir.path().string(), "t", cut_short), std::runtime_error);
  EXPECT_FALSE(published_while_replaced);
  auto f = initialize(cfg, make_model(cfg), quiet());
  try {
    f->load_checkpoint(dir.path().string(), "t");
    FAIL() << "a tag with this run's files and the earlier meta.json loaded";
  } catch (const engine::CheckpointError& err) {
    EXPECT_NE(std::string(err.what()).find("incomplete"), std::string::npos) << err.what();
  }
  EXPECT_EQ(f->load_checkpoint(dir.path().string()), "other");
}

TEST(Checkpoint, CorruptPayloadFailsTheChecksum) {
  test::TempDir dir;
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  run_steps(*e, 1);
  e->save_checkpoint(dir.path().string(), "t");
  const auto part = dir.path() / "t" / engine::partition_file_name(0);
  {
    std::fstream io(part, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(200);
    const char junk[4] = {1, 2, 3, 4};
    io.write(junk, 4);
  }
  auto f = initialize(cfg, make_model(cfg), quiet());
  try {
    f->load_checkpoint(dir.path().string());
    FAIL() << "expected a checksum error";
  } catch (const engine::CheckpointError& err) {
    EXPECT_NE(std::string(err.what()).find("checksum"), std::string::npos) << err.what();
  }
}

TEST(Checkpoint, MissingCheckpointAndDifferentModelAreClearErrors) {
  test::TempDir dir;
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  try {
    e->load_checkpoint(dir.path().string());
    FAIL();
  } catch (const engine::CheckpointError& err) {
    EXPECT_NE(std::string(err.what()).find("latest not found"), std::string::npos) << err.what();
  }
  e->save_checkpoint(dir.path().string(), "t");
  auto other = test::tiny_config({{"hybrid", {{"model", {{"n_layer", 3}}}}}});
  auto g = initialize(other, make_model(other), quiet());
  try {
    g->load_checkpoint(dir.path().string());
    FAIL();
  } catch (const engine::CheckpointError& err) {
    EXPECT_NE(std::string(err.what()).find("/t was saved for model.n_layer 2, this config has 3"),
              std::string::npos)
        << err.what();
  }
}

TEST(Checkpoint, ConsolidateToolWritesTheMasterWeights) {
  test::TempDir dir;
  auto cfg = test::tiny_config({{"bf16", {{"enabled", true}}}});
  auto e = initialize(cfg, make_model(cfg), quiet());
  run_steps(*e, 2);
  e->save_checkpoint(dir.path().string(), "t");
  const auto r = test::run_command(test::tool("hybrid-ckpt") + " consolidate --dir " +
                                   dir.path().string() + " --out " + (dir / "model.bin"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto w = engine::read_llmc_checkpoint(dir / "model.bin");
  std::vector<float> flat;
  engine::gpt2_from_llmc(test::gpt2_of(*e), e->module_tree(), w, flat);
  EXPECT_EQ(flat, e->gather_parameters());  // the fp32 master, not the bf16 copy
}

}  // namespace
}  // namespace hybrid
