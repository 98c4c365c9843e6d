// The memory of activation checkpointing: the engine allocates exactly the
// layouts the memory model sums (device and host, ZeRO stages 0 and 3, every
// policy), and the saving is what the model predicts and what a closed form
// says it must be: checkpointing every block of L keeps one set of block
// internals instead of L. Then real runs of hybrid-train on two ranks: the
// measured peaks equal the prediction, the saving is as predicted (±10 %, the
// issue's tolerance; exact here), and losses and weights are bitwise those of
// the run without checkpointing.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::Config;
using engine::MemCategory;
using test::quiet;

constexpr size_t kActivations = size_t(MemCategory::activations);

nlohmann::json patch_for(int stage, const std::string& dtype, const std::string& policy) {
  nlohmann::json p = {{"gradient_accumulation_steps", 2},
                      {"zero_optimization",
                       {{"stage", stage},
                        {"reduce_bucket_size", 20000},
                        {"stage3_param_persistence_threshold", 200},
                        {"stage3_prefetch_bucket_size", 5000}}},
                      {"hybrid", {{"model", {{"n_layer", 4}}}}}};
  if (dtype != "fp32") p[dtype] = {{"enabled", true}};
  if (policy == "every") p["activation_checkpointing"] = nlohmann::json::object();
  if (policy == "every2") p["hybrid"]["activation_checkpointing"] = {{"every", 2}};
  if (policy == "host") p["activation_checkpointing"] = {{"cpu_checkpointing", true}};
  if (policy == "host3") {
    p["activation_checkpointing"] = {{"cpu_checkpointing", true}};
    p["hybrid"]["activation_checkpointing"] = {{"every", 3}};
  }
  return p;
}

void expect_equal(const engine::CategoryBytes& measured, const engine::CategoryBytes& expected,
                  const std::string& what) {
  for (int c = 0; c < engine::kMemCategoryCount; ++c)
    EXPECT_EQ(measured[size_t(c)], expected[size_t(c)])
        << what << " " << engine::mem_category_name(MemCategory(c));
}

using MemoryCase = std::tuple<int, std::string, std::string>;  // stage, dtype, policy
class CheckpointingMemory : public ::testing::TestWithParam<MemoryCase> {};

TEST_P(CheckpointingMemory, AllocationAndPeaksAreThePredictionExactly) {
  const auto& [stage, dtype, policy] = GetParam();
  const Config cfg = test::tiny_config(patch_for(stage, dtype, policy));
  auto e = initialize(cfg, make_model(cfg), quiet());
  const uint64_t saved =
      e->backend().attention_saved_bytes(cfg.param_dtype(), cfg.train_micro_batch_size_per_gpu,
                                         cfg.model.seq_len, cfg.model.n_embd, cfg.model.n_head);
  const auto layouts = engine::engine_layouts(cfg, 1, saved);
  expect_equal(e->allocator().stats().current, layouts.device.resident_bytes(), "device, init");
  expect_equal(e->host_allocator().stats().current, layouts.host.resident_bytes(), "host, init");
  e->allocator().reset_peaks();
  e->host_allocator().reset_peaks();
  test::train_on_fixed_batch(*e, 3);
  const auto predicted = engine::predict_memory(cfg, 1, e->backend());
  expect_equal(e->allocator().stats().peak, predicted.bytes, "device peak");
  expect_equal(e->host_allocator().stats().peak, predicted.host, "host peak");
  expect_equal(e->allocator().stats().current, layouts.device.resident_bytes(), "device, after");
}

INSTANTIATE_TEST_SUITE_P(StagesDtypesPolicies, CheckpointingMemory,
                         ::testing::Combine(::testing::Values(0, 3),
                                            ::testing::Values("fp32", "bf16"),
                                            ::testing::Values("every", "every2", "host", "host3")),
                         [](const auto& info) {
                           return "stage" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param) + "_" + std::get<2>(info.param);
                         });

// One block's internals (what a checkpointed block no longer keeps), from the
// shapes: ln_1, attention (qkv 3C, output C, the backend's saved state: B·NH·T
// fp32 on the CPU), residual_mid, ln_2, fc 4C and gelu 4C in the parameter
// dtype, and two layernorms' fp32 mean and rstd.
uint64_t block_internals(const Config& cfg, uint64_t attention_saved) {
  const uint64_t N = uint64_t(cfg.train_micro_batch_size_per_gpu) * uint64_t(cfg.model.seq_len);
  const uint64_t C = uint64_t(cfg.model.n_embd), d = kernels::dtype_size(cfg.param_dtype());
  return N * C * d * (1 + 3 + 1 + 1 + 1 + 4 + 4) + 2 * (2 * N * 4) + attention_saved;
}

TEST(CheckpointingMemory, EveryBlockSavesAllButOneSetOfInternalsAsPredicted) {
  for (const std::string dtype : {"fp32", "bf16"}) {
    const Config off = test::tiny_config(patch_for(0, dtype, "none"));
    const Config on = test::tiny_config(patch_for(0, dtype, "every"));
    const Config host = test::tiny_config(patch_for(0, dtype, "host"));
    auto a = initialize(off, make_model(off), quiet());
    auto b = initialize(on, make_model(on), quiet());
    auto h = initialize(host, make_model(host), quiet());
    for (auto* e : {a.get(), b.get(), h.get()}) {
      e->allocator().reset_peaks();
      test::train_on_fixed_batch(*e, 2);
    }
    const uint64_t peak_off = a->allocator().stats().peak[kActivations];
    const uint64_t peak_on = b->allocator().stats().peak[kActivations];
    const uint64_t peak_host = h->allocator().stats().peak[kActivations];
    const auto& be = a->backend();
    const uint64_t pred_off = engine::predict_memory(off, 1, be)[MemCategory::activations];
    const uint64_t pred_on = engine::predict_memory(on, 1, be)[MemCategory::activations];
    const uint64_t pred_host = engine::predict_memory(host, 1, be)[MemCategory::activations];
    const uint64_t measured = peak_off - peak_on, predicted = pred_off - pred_on;
    ASSERT_GT(predicted, 0u);
    EXPECT_LE(std::abs(double(measured) - double(predicted)), 0.1 * double(predicted)) << dtype;
    EXPECT_EQ(measured, predicted) << dtype;
    const int L = off.model.n_layer;
    const uint64_t saved =
        be.attention_saved_bytes(off.param_dtype(), off.train_micro_batch_size_per_gpu,
                                 off.model.seq_len, off.model.n_embd, off.model.n_head);
    EXPECT_EQ(saved, uint64_t(off.train_micro_batch_size_per_gpu) * off.model.n_head *
                         off.model.seq_len * 4)
        << "the CPU attention keeps one fp32 lse per (batch, head, row)";
    EXPECT_EQ(measured, uint64_t(L - 1) * block_internals(off, saved)) << dtype;
    EXPECT_LT(double(peak_on), 0.75 * double(peak_off)) << dtype << ": a real reduction";
    // cpu_checkpointing: the L kept inputs move to host memory; the device keeps
    // two slots for them and the last block's output (ln_f's input).
    const uint64_t stream = uint64_t(on.train_micro_batch_size_per_gpu) * on.model.seq_len *
                            on.model.n_embd * kernels::dtype_size(on.param_dtype());
    EXPECT_EQ(peak_on - peak_host, uint64_t(L + 1) * stream - 3 * stream) << dtype;
    EXPECT_EQ(pred_on - pred_host, peak_on - peak_host) << dtype;
    EXPECT_EQ(h->host_allocator().stats().peak[kActivations], uint64_t(L) * stream) << dtype;
    // Module::activation_bytes (the store's modules table) follows the layout.
    EXPECT_EQ(b->model().block(1).activation_bytes(), stream) << "only its output is its own";
    EXPECT_EQ(a->model().block(1).activation_bytes(), block_internals(off, saved) + stream);
  }
}

// ---- two ranks, the real hybrid-train ----------------------------------------------

struct TrainRun {
  int exit_code = -1;
  std::string output;
  nlohmann::json result;
  std::vector<float> weights;
};

TrainRun hybrid_train(const test::TempDir& dir, const std::string& name,
                      const nlohmann::json& patch) {
  const std::string cfg = dir / (name + ".json"), res = dir / (name + ".result.json"),
                    out = dir / (name + ".bin");
  test::write_json(cfg, test::tiny_config_json(patch));
  TrainRun r;
  const auto c =
      test::run_command(test::launcher(2) + test::tool("hybrid-train") + " --config " + cfg +
                        " --result " + res + " --export-llmc " + out + " --steps 4");
  r.exit_code = c.exit_code;
  r.output = c.output;
  if (std::filesystem::exists(res)) r.result = test::read_json(res);
  if (c.exit_code == 0) {
    const auto w = engine::read_llmc_checkpoint(out);
    for (auto* t : w.tensors()) r.weights.insert(r.weights.end(), t->begin(), t->end());
  }
  return r;
}

TEST(CheckpointingMpi, TwoRanksTrainBitwiseAsWithoutAndSaveWhatThePredictionSays) {
  test::TempDir dir;
  for (int stage : {0, 3}) {
    const std::string tag = fmt::format("stage {}", stage);
    const auto a =
        hybrid_train(dir, fmt::format("s{}off", stage), patch_for(stage, "bf16", "none"));
    const auto b = hybrid_train(dir, fmt::format("s{}on", stage), patch_for(stage, "bf16", "host"));
    ASSERT_EQ(a.exit_code, 0) << a.output;
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(a.result.at("losses"), b.result.at("losses")) << tag;
    EXPECT_TRUE(a.weights == b.weights) << tag << ": final fp32 weights differ";
    EXPECT_NE(b.output.find("activation_checkpointing: 4 of 4 blocks (h.{0, 1, 2, 3}) keep only "
                            "their input in host memory"),
              std::string::npos)
        << b.output;
    for (const auto* r : {&a, &b}) {
      const auto& peak = r->result.at("peak_memory_bytes");
      const auto& pred = r->result.at("predicted_memory_bytes");
      for (auto it = peak.begin(); it != peak.end(); ++it)
        EXPECT_EQ(it.value(), pred.at(it.key())) << tag << ", " << it.key();
    }
    const auto act = [](const TrainRun& r, const char* what) {
      return r.result.at(what).at("activations").get<double>();
    };
    const double measured = act(a, "peak_memory_bytes") - act(b, "peak_memory_bytes");
    const double predicted = act(a, "predicted_memory_bytes") - act(b, "predicted_memory_bytes");
    ASSERT_GT(predicted, 0.0) << tag;
    EXPECT_LE(std::abs(measured - predicted), 0.1 * predicted) << tag;
    EXPECT_EQ(b.result.at("peak_host_memory_bytes").at("activations"),
              b.result.at("predicted_host_memory_bytes").at("activations"))
        << tag;
  }
}

}  // namespace
}  // namespace hybrid
