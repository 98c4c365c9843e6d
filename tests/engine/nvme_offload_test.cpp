// ZeRO-Infinity: stage 3's parameter partition in host memory or an NVMe swap
// file (offload_param), the offloaded optimizer's master weights and moments in
// NVMe swap files (offload_optimizer "nvme"), with real files on disk:
// - training is bitwise identical to no offload (losses, final fp32 weights),
//   with the optimizer offloaded or on the device, in one process and on 2 ranks
//   under mpirun hybrid-train (ZeRO-3 + param NVMe + optimizer CPU + fp16, the
//   ZeRO-Infinity guide's config);
// - the memory model predicts device, host and NVMe bytes per category exactly
//   (the files' sizes as the filesystem reports them);
// - the swap files exist under nvme_path while the engine lives and are gone
//   after it, also when initialisation fails or the run ends with an error;
// - the optimizer's swap traffic per step is the closed form n·(1 + state)·4
//   each way, and the comm/IO report shows the offload's bandwidth;
// - bad values are refused naming the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/memory_model.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::ConfigError;
using engine::MemCategory;
using test::quiet;
using test::run_hybrid_train;
using ::testing::HasSubstr;

std::vector<std::string> swap_files(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// stage 3 (or 2) with optimizer and parameter offload as given ("none", "cpu", "nvme").
nlohmann::json patch_for(const std::string& dtype, const std::string& opt,
                         const std::string& params, const std::string& nvme_dir, int stage = 3) {
  nlohmann::json p = test::zero_training_patch(stage, dtype);
  p["aio"] = {{"block_size", 65536}, {"queue_depth", 4}, {"thread_count", 2}};
  // Three slots for the tiny model's four chunks: a read-ahead that wraps around.
  if (opt != "none")
    p["zero_optimization"]["offload_optimizer"] = {
        {"device", opt}, {"nvme_path", nvme_dir}, {"buffer_count", 3}};
  if (params != "none")
    p["zero_optimization"]["offload_param"] = {{"device", params}, {"nvme_path", nvme_dir}};
  return p;
}

struct Where {
  std::string dtype, opt, params;
};

void PrintTo(const Where& w, std::ostream* os) {
  *os << w.dtype << ", optimizer " << w.opt << ", parameters " << w.params;
}

class Infinity : public ::testing::TestWithParam<Where> {};

TEST_P(Infinity, TrainsBitwiseAsWithoutOffloadWithExactMemoryAndFilesRemoved) {
  const auto& w = GetParam();
  test::TempDir dir;
  const std::string nvme = dir.path().string();
  const auto base_cfg = test::tiny_config(patch_for(w.dtype, "none", "none", nvme));
  const auto cfg = test::tiny_config(patch_for(w.dtype, w.opt, w.params, nvme));
  auto ref = initialize(base_cfg, make_model(base_cfg), quiet());
  const auto ref_losses = test::train_on_changing_batches(*ref, 4);
  const auto ref_weights = ref->gather_parameters();
  {
    auto e = initialize(cfg, make_model(cfg), quiet());
    EXPECT_EQ(e->zero().params_offloaded(), w.params != "none");
    // The swap files are open and their space reserved (nvme_bytes below, from
    // fstat), but their names are already gone: nothing can outlive the process.
    EXPECT_TRUE(swap_files(dir.path()).empty()) << testing::PrintToString(swap_files(dir.path()));
    e->allocator().reset_peaks();
    e->host_allocator().reset_peaks();
    const auto losses = test::train_on_changing_batches(*e, 4);
    EXPECT_EQ(losses, ref_losses);
    EXPECT_EQ(e->gather_parameters(), ref_weights) << "final fp32 master weights";
    EXPECT_EQ(e->skipped_steps(), ref->skipped_steps());

    // Device, host and NVMe bytes, category by category, exactly as predicted.
    const auto pred = engine::predict_memory(cfg, 1, e->backend());
    const auto dev = e->allocator().stats(), host = e->host_allocator().stats();
    const auto disk = e->nvme_bytes();
    for (int c = 0; c < engine::kMemCategoryCount; ++c) {
      const std::string name(engine::mem_category_name(MemCategory(c)));
      EXPECT_EQ(dev.peak[size_t(c)], pred.bytes[size_t(c)]) << "device " << name;
      EXPECT_EQ(host.peak[size_t(c)], pred.host[size_t(c)]) << "host " << name;
      EXPECT_EQ(disk[size_t(c)], pred.nvme[size_t(c)]) << "nvme " << name;
    }
    // What moved: the partition left the device; with NVMe it is not in host memory either.
    const auto on_device = engine::predict_memory(base_cfg, 1, e->backend());
    const uint64_t n_params = uint64_t(e->zero().partition().shard_size());
    const uint64_t psize = kernels::dtype_size(cfg.param_dtype());
    // (With the optimizer on the device the updated partition passes through it
    // during the step, while no gathered parameters are live: the peak is the larger.)
    if (w.params != "none" && w.opt != "none") {
      EXPECT_EQ(pred.bytes[size_t(MemCategory::params)] + n_params * psize,
                on_device.bytes[size_t(MemCategory::params)]);
    }
    if (w.params == "nvme") {
      EXPECT_EQ(host.peak[size_t(MemCategory::params)], 0u);
      EXPECT_EQ(disk[size_t(MemCategory::params)], engine::io::align_up(n_params * psize));
    }
    if (w.opt == "nvme") {
      EXPECT_EQ(disk[size_t(MemCategory::master)], engine::io::align_up(n_params * 4));
      EXPECT_EQ(disk[size_t(MemCategory::optimizer)], engine::io::align_up(n_params * 8));
      EXPECT_LT(host.peak[size_t(MemCategory::optimizer)], n_params * 8)
          << "only the swap slots stay in host memory";
    }
  }
  EXPECT_TRUE(swap_files(dir.path()).empty()) << "swap files removed with the engine";
}

INSTANTIATE_TEST_SUITE_P(
    ParamsAndOptimizer, Infinity,
    ::testing::Values(Where{"fp16", "cpu", "nvme"}, Where{"fp16", "cpu", "cpu"},
                      Where{"bf16", "nvme", "nvme"}, Where{"fp32", "nvme", "nvme"},
                      Where{"fp32", "nvme", "cpu"}, Where{"bf16", "nvme", "none"},
                      Where{"fp16", "none", "nvme"}, Where{"fp32", "none", "cpu"},
                      Where{"bf16", "none", "nvme"}),
    [](const auto& info) {
      return info.param.dtype + "_opt_" + info.param.opt + "_params_" + info.param.params;
    });

// Each step reads and writes the whole master and state once: n·(1 + 2)·4 bytes
// each way for AdamW, whatever the chunking; collectives are not affected.
TEST(InfinityIo, OptimizerSwapTrafficIsTheClosedFormAndNotCommunication) {
  test::TempDir dir;
  const auto cfg = test::tiny_config(patch_for("bf16", "nvme", "none", dir.path().string(), 2));
  const auto plain = test::tiny_config(patch_for("bf16", "cpu", "none", dir.path().string(), 2));
  auto e = initialize(cfg, make_model(cfg), quiet());
  auto p = initialize(plain, make_model(plain), quiet());
  const uint64_t n = uint64_t(e->zero().optimizer_range().size());
  auto io_bytes = [&] {
    std::array<uint64_t, 2> b{};  // read, written
    for (const auto& s : e->comm_tracer().io_stats()) {
      b[s.kind == profiler::IoKind::nvme_read ? 0 : 1] += s.total_bytes;
      EXPECT_GT(s.mean_gbps(), 0.0);
    }
    return b;
  };
  EXPECT_EQ(io_bytes(), (std::array<uint64_t, 2>{0, n * 12})) << "initial weights written once";
  test::train_on_changing_batches(*e, 4);
  test::train_on_changing_batches(*p, 4);
  EXPECT_EQ(io_bytes(), (std::array<uint64_t, 2>{4 * n * 12, 5 * n * 12}));
  auto totals = [](const profiler::CommTracer& t) {
    std::array<uint64_t, 2> c{};  // collectives, bytes
    for (const auto& s : t.steps()) c[0] += s.collectives, c[1] += s.bytes;
    return c;
  };
  EXPECT_EQ(totals(e->comm_tracer()), totals(p->comm_tracer())) << "swap I/O is not communication";
  EXPECT_NE(e->comm_tracer().summary().find("nvme_write"), std::string::npos);
}

TEST(InfinityCheckpoint, MovesBetweenNvmeAndDevice) {
  test::TempDir dir, ckpt;
  const std::string nvme = dir.path().string();
  const auto off = test::tiny_config(patch_for("bf16", "nvme", "nvme", nvme));
  const auto on = test::tiny_config(patch_for("bf16", "none", "none", nvme));
  auto full = initialize(on, make_model(on), quiet());
  const auto all = test::train_on_changing_batches(*full, 6);
  auto first = initialize(off, make_model(off), quiet());
  test::train_on_changing_batches(*first, 3);
  first->save_checkpoint(ckpt.path().string(), "mid");
  auto second = initialize(on, make_model(on), quiet());
  second->load_checkpoint(ckpt.path().string());
  const auto rest = test::train_on_changing_batches(*second, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rest[size_t(i)], all[size_t(3 + i)]) << "step " << 4 + i;
  auto third = initialize(off, make_model(off), quiet());
  third->load_checkpoint(ckpt.path().string());
  const auto rest_nvme = test::train_on_changing_batches(*third, 3);
  EXPECT_EQ(rest_nvme, rest) << "loaded into NVMe swap files";
  EXPECT_EQ(third->gather_parameters(), full->gather_parameters());
}

TEST(InfinityConfig, BadValuesAreRefusedNamingTheKey) {
  test::TempDir dir;
  const std::string nvme = dir.path().string();
  auto error_at_init = [](const nlohmann::json& patch) -> std::string {
    try {
      const auto cfg = test::tiny_config(patch);
      initialize(cfg, make_model(cfg), quiet());
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_at_init(patch_for("fp16", "cpu", "nvme", dir / "nope")),
            "config: zero_optimization.offload_param.nvme_path \"" + dir / "nope" +
                "\" cannot be used: no such directory");
  EXPECT_EQ(error_at_init(patch_for("fp16", "nvme", "cpu", dir / "nope")),
            "config: zero_optimization.offload_optimizer.nvme_path \"" + dir / "nope" +
                "\" cannot be used: no such directory");
  auto small = patch_for("fp16", "nvme", "nvme", nvme);
  small["zero_optimization"]["offload_param"]["buffer_size"] = 100;
  EXPECT_THAT(error_at_init(small),
              HasSubstr("config: zero_optimization.offload_param.buffer_size must be at least"));
  EXPECT_TRUE(swap_files(dir.path()).empty())
      << "the optimizer's files, made before the error, are gone";

  auto parse_error = [](const nlohmann::json& patch) -> std::string {
    try {
      test::tiny_config(patch);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(parse_error(patch_for("fp16", "cpu", "cpu", nvme, 2)),
              HasSubstr("config: zero_optimization.offload_param.device \"cpu\" needs "
                        "zero_optimization.stage 3 (only stage 3 partitions parameters), got "
                        "stage 2"));
  EXPECT_THAT(parse_error({{"zero_optimization", {{"offload_optimizer", {{"device", "ssd"}}}}}}),
              HasSubstr("zero_optimization.offload_optimizer.device must be one of"));
  EXPECT_THAT(
      parse_error({{"zero_optimization", {{"stage", 3}, {"offload_param", {{"device", "nvme"}}}}}}),
      HasSubstr("config: zero_optimization.offload_param.nvme_path must be given"));
  for (const char* key : {"block_size", "queue_depth", "thread_count"})
    for (int bad : {0, -4})
      EXPECT_THAT(parse_error({{"aio", {{key, bad}}}}),
                  HasSubstr(std::string("config: aio.") + key + " must be a"))
          << key << " " << bad;
  EXPECT_THAT(parse_error({{"aio", {{"block_size", 1000}}}}),
              HasSubstr("config: aio.block_size must be a positive multiple of 4096"));
  auto one = patch_for("fp16", "nvme", "none", nvme);
  one["zero_optimization"]["offload_optimizer"]["buffer_count"] = 1;
  EXPECT_THAT(parse_error(one),
              HasSubstr("config: zero_optimization.offload_optimizer.buffer_count must be"));
  const auto good = test::tiny_config({{"aio",
                                        {{"block_size", 131072},
                                         {"queue_depth", 32},
                                         {"thread_count", 4},
                                         {"single_submit", true},
                                         {"overlap_events", false}}}});
  EXPECT_EQ(good.aio.block_size, 131072);
  EXPECT_EQ(good.aio.queue_depth, 32);
  EXPECT_EQ(good.aio.thread_count, 4);
  EXPECT_TRUE(good.aio.single_submit);
  EXPECT_FALSE(good.aio.overlap_events);
}

// ---- two ranks, the real hybrid-train ----------------------------------------------

TEST(InfinityMpi, ZeroThreeParamsOnNvmeOptimizerOnCpuFp16MatchesBitwiseOnTwoRanks) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.path() / "nvme");
  const std::string nvme = dir / "nvme", db = dir / "runs.db";
  const auto ref =
      run_hybrid_train(dir, "ref", 2, patch_for("fp16", "none", "none", nvme), "--quiet --steps 6");
  const auto off = run_hybrid_train(dir, "off", 2, patch_for("fp16", "cpu", "nvme", nvme),
                                    "--quiet --steps 6 --db " + db);
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_EQ(off.result.at("losses"), ref.result.at("losses"));
  EXPECT_TRUE(off.weights == ref.weights) << "final fp32 weights differ";
  // The partition in host memory with the optimizer on the device: the same run too.
  const auto host =
      run_hybrid_train(dir, "host", 2, patch_for("fp16", "none", "cpu", nvme), "--quiet --steps 6");
  ASSERT_EQ(host.exit_code, 0) << host.output;
  EXPECT_EQ(host.result.at("losses"), ref.result.at("losses"));
  EXPECT_TRUE(host.weights == ref.weights);
  EXPECT_EQ(off.result.at("nvme_bytes"), off.result.at("predicted_nvme_bytes"));
  EXPECT_GT(off.result.at("nvme_bytes").at("params").get<uint64_t>(), 0u);
  EXPECT_EQ(off.result.at("peak_memory_bytes").at("master"), 0);
  EXPECT_EQ(off.result.at("peak_host_memory_bytes").at("params"), 0)
      << "the partition is on NVMe, not in host memory";
  EXPECT_GT(off.result.at("io").at("nvme_read").at("bytes").get<uint64_t>(), 0u);
  EXPECT_GT(off.result.at("io").at("nvme_write").at("gbps").get<double>(), 0.0);
  EXPECT_TRUE(swap_files(nvme).empty()) << "files removed at exit";
  // The stored run: memory per space and the offload's bandwidth in the reports.
  const std::string prof = std::string(HYBRID_BINARY_DIR) + "/profiler/hybrid-prof";
  const std::string run = std::to_string(off.result.at("run_id").get<int>());
  const auto mem = test::run_command(prof + " report memory --db " + db + " --run " + run);
  EXPECT_THAT(mem.output, HasSubstr("rank 1, NVMe swap files (offload):")) << mem.output;
  EXPECT_THAT(mem.output, HasSubstr("rank 0, host memory (offload):")) << mem.output;
  const auto comm = test::run_command(prof + " report comm --db " + db + " --run " + run);
  EXPECT_THAT(comm.output, HasSubstr("Offload I/O (NVMe swap files")) << comm.output;
  EXPECT_THAT(comm.output, HasSubstr("nvme_read")) << comm.output;
}

TEST(InfinityMpi, ZeroTwoAdamWWarmupLrCpuOffloadMatchesBitwiseOnTwoRanks) {
  test::TempDir dir;
  auto patch = [](bool offload) {
    nlohmann::json p = {
        {"gradient_accumulation_steps", 2},
        {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 2e-3}, {"weight_decay", 0.1}}}}},
        {"scheduler",
         {{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", 4}, {"warmup_type", "linear"}}}}},
        {"zero_optimization", {{"stage", 2}, {"reduce_bucket_size", 3000}}},
        {"bf16", {{"enabled", true}}}};
    if (offload) p["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
    return p;
  };
  const auto ref = run_hybrid_train(dir, "ref", 2, patch(false), "--quiet --steps 6");
  const auto off = run_hybrid_train(dir, "off", 2, patch(true), "--quiet --steps 6");
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_EQ(off.result.at("losses"), ref.result.at("losses"));
  EXPECT_TRUE(off.weights == ref.weights) << "final fp32 weights differ";
  EXPECT_NE(ref.result.at("losses")[0], ref.result.at("losses")[5]) << "it trained";
}

TEST(InfinityMpi, FilesAreRemovedWhenTheRunFails) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.path() / "nvme");
  const std::string nvme = dir / "nvme";
  auto patch = patch_for("bf16", "nvme", "nvme", nvme);
  patch["hybrid"]["memory_budget"] = "40KiB";  // the swap files exist; activations do not fit
  const auto r = run_hybrid_train(dir, "oom", 2, patch, "--quiet --steps 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.result.at("status"), "oom") << r.output;
  EXPECT_TRUE(swap_files(nvme).empty()) << testing::PrintToString(swap_files(nvme));
}

// Lamb's two passes through the swap slots: the first updates the moments and
// gathers the per-tensor norms, the second applies the trust ratios; both swap
// every chunk in and out, and the result is the on-device optimizer's, bit for bit.
TEST(Infinity, LambOnNvmeMatchesLambOnTheDeviceBitwise) {
  test::TempDir dir;
  auto patch = [&](const std::string& opt) {
    auto p = patch_for("bf16", opt, "none", dir.path().string(), 2);
    p["optimizer"] = {{"type", "Lamb"},
                      {"params", {{"lr", 2e-3}, {"weight_decay", 0.01}, {"max_coeff", 5.0}}}};
    return p;
  };
  const auto base_cfg = test::tiny_config(patch("none"));
  const auto cfg = test::tiny_config(patch("nvme"));
  auto ref = initialize(base_cfg, make_model(base_cfg), quiet());
  auto off = initialize(cfg, make_model(cfg), quiet());
  ASSERT_GT(off->nvme_bytes()[size_t(MemCategory::optimizer)], 0u);
  const auto losses = test::train_on_changing_batches(*off, 4);
  EXPECT_EQ(losses, test::train_on_changing_batches(*ref, 4));
  EXPECT_NE(losses.front(), losses.back()) << "it trained";
  EXPECT_EQ(off->gather_parameters(), ref->gather_parameters()) << "final fp32 master weights";
}

// A run killed outright (SIGKILL: no destructor, no handler) leaves nothing
// under nvme_path either: the kernel frees unlinked files with the process.
TEST(InfinityMpi, FilesAreGoneAfterSigkill) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.path() / "nvme");
  const std::string nvme = dir / "nvme", cfg = dir / "kill.json", log = dir / "kill.log";
  test::write_json(cfg, test::tiny_config_json(patch_for("fp32", "nvme", "nvme", nvme)));
  // Start a long run, wait (up to 300 s) until it says where its swap files
  // live, then SIGKILL it; the script prints the status the shell saw.
  const std::string train = test::tool("hybrid-train") + " --config " + cfg + " --steps 1000000";
  const auto r = test::run_command("sh -c '" + train + " > " + log +
                                   " 2>&1 & pid=$!; i=0; "
                                   "until grep -q \"NVMe swap file\" " +
                                   log +
                                   " || [ $i -ge 3000 ]; do sleep 0.1; i=$((i+1)); done; "
                                   "kill -9 $pid; wait $pid; echo status=$?'");
  std::ifstream in(log);
  const std::string output{std::istreambuf_iterator<char>(in), {}};
  ASSERT_THAT(output, HasSubstr("NVMe swap file")) << output;
  EXPECT_THAT(r.output, HasSubstr("status=137")) << r.output << output;
  EXPECT_TRUE(swap_files(nvme).empty()) << testing::PrintToString(swap_files(nvme));
}

}  // namespace
}  // namespace hybrid
