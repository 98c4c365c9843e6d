// Activation checkpointing (engine/model/activation_checkpointing.h):
// - the config: DeepSpeed's activation_checkpointing block, ours
//   (hybrid.activation_checkpointing.every), their resolution, errors and warnings;
// - recomputation gives bitwise the gradients, losses and weights of a run
//   without it: ZeRO stages 0–3, fp32, bf16 and fp16 (loss scaling), every
//   block, every second block, and inputs kept in host memory;
// - the memory model predicts what the engine allocates exactly, with and
//   without checkpointing, on the device and in host memory, and the saving of
//   checkpointing every block is the closed form (L − 1) × one block's internals;
// - profile and synchronize_checkpoint_boundary.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/model/gpt2/gpt2.h"
#include "engine_test_util.h"
#include "tests/common/error_of.h"

namespace hybrid {
namespace {

using engine::Config;
using engine::ConfigError;
using engine::MemCategory;
using test::quiet;

std::string error_of(const nlohmann::json& patch) {
  return hybrid::test::error_of<ConfigError>([&] { test::tiny_config(patch); }, "(no ConfigError)");
}

nlohmann::json model_layers(int n) { return {{"hybrid", {{"model", {{"n_layer", n}}}}}}; }

// ---- config ---------------------------------------------------------------------

TEST(ActivationCheckpointingConfig, OffWithoutEitherBlock) {
  const auto c = test::tiny_config();
  EXPECT_EQ(c.activation_checkpointing.every, 0);
  EXPECT_FALSE(engine::checkpoint_plan(c).any());
  EXPECT_TRUE(c.warnings.empty());
}

TEST(ActivationCheckpointingConfig, DeepSpeedBlockCheckpointsEveryBlockAndReadsItsKeys) {
  auto patch = model_layers(4);
  patch["activation_checkpointing"] = {{"partition_activations", false},
                                       {"cpu_checkpointing", true},
                                       {"contiguous_memory_optimization", false},
                                       {"synchronize_checkpoint_boundary", true},
                                       {"profile", true}};
  const auto c = test::tiny_config(patch);
  EXPECT_EQ(c.activation_checkpointing.every, 1);
  const auto plan = engine::checkpoint_plan(c);
  EXPECT_EQ(plan.blocks, std::vector<bool>({true, true, true, true}));
  EXPECT_TRUE(plan.host_inputs);
  EXPECT_TRUE(plan.synchronize);
  EXPECT_TRUE(plan.profile);
  EXPECT_TRUE(c.ignored_keys.empty()) << c.ignored_keys.front();
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
}

TEST(ActivationCheckpointingConfig, EveryKthBlockFromOursOrFromNumberCheckpoints) {
  auto ours = model_layers(5);
  ours["hybrid"]["activation_checkpointing"] = {{"every", 2}};
  EXPECT_EQ(engine::checkpoint_plan(test::tiny_config(ours)).blocks,
            std::vector<bool>({true, false, true, false, true}));
  // number_checkpoints n: at most n blocks, every ceil(L/n)-th.
  for (auto [n, every, count] : {std::tuple{1, 5, 1}, std::tuple{2, 3, 2}, std::tuple{3, 2, 3},
                                 std::tuple{5, 1, 5}, std::tuple{9, 1, 5}}) {
    auto p = model_layers(5);
    p["activation_checkpointing"] = {{"number_checkpoints", n}};
    const auto c = test::tiny_config(p);
    EXPECT_EQ(c.activation_checkpointing.every, every) << "number_checkpoints " << n;
    EXPECT_EQ(engine::checkpoint_plan(c).count(), count) << "number_checkpoints " << n;
  }
  // Both given and agreeing is fine; ours alone with 0 turns the block off, with a warning.
  auto both = model_layers(5);
  both["activation_checkpointing"] = {{"number_checkpoints", 3}, {"cpu_checkpointing", true}};
  both["hybrid"]["activation_checkpointing"] = {{"every", 2}};
  EXPECT_EQ(test::tiny_config(both).activation_checkpointing.every, 2);
  auto off = model_layers(5);
  off["activation_checkpointing"] = {{"cpu_checkpointing", true}};
  off["hybrid"]["activation_checkpointing"] = {{"every", 0}};
  const auto c = test::tiny_config(off);
  EXPECT_FALSE(engine::checkpoint_plan(c).any());
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("hybrid.activation_checkpointing.every is 0"), std::string::npos)
      << c.warnings[0];
}

TEST(ActivationCheckpointingConfig, KeysWithoutEffectHereAreWarnedAboutOnceWithTheReason) {
  auto p = model_layers(2);
  p["activation_checkpointing"] = {{"partition_activations", true},
                                   {"contiguous_memory_optimization", true}};
  const auto c = test::tiny_config(p);
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_EQ(c.warnings[0].rfind("activation_checkpointing.partition_activations: no effect", 0), 0u)
      << c.warnings[0];
  EXPECT_NE(c.warnings[0].find("tensor-parallel ranks"), std::string::npos) << c.warnings[0];
  EXPECT_EQ(
      c.warnings[1].rfind("activation_checkpointing.contiguous_memory_optimization: no effect", 0),
      0u)
      << c.warnings[1];
}

TEST(ActivationCheckpointingConfig, BadValuesNameTheKey) {
  EXPECT_EQ(error_of({{"activation_checkpointing", {{"number_checkpoints", 0}}}})
                .rfind("config: activation_checkpointing.number_checkpoints must be", 0),
            0u);
  EXPECT_NE(error_of({{"activation_checkpointing", {{"cpu_checkpointing", "yes"}}}})
                .find("activation_checkpointing.cpu_checkpointing"),
            std::string::npos);
  EXPECT_NE(error_of({{"hybrid", {{"activation_checkpointing", {{"every", -1}}}}}})
                .find("config: hybrid.activation_checkpointing.every must be a non-negative"),
            std::string::npos);
  auto both = model_layers(4);
  both["activation_checkpointing"] = {{"number_checkpoints", 2}};
  both["hybrid"]["activation_checkpointing"] = {{"every", 1}};
  EXPECT_EQ(error_of(both),
            "config: activation_checkpointing.number_checkpoints 2 means every = 2 over 4 blocks "
            "(ceil(4 / 2)), but hybrid.activation_checkpointing.every is 1; give one of them");
  auto unknown = model_layers(2);
  unknown["hybrid"]["activation_checkpointing"] = {{"evry", 1}};
  EXPECT_EQ(test::tiny_config(unknown).ignored_keys,
            std::vector<std::string>{"hybrid.activation_checkpointing.evry"});
}

// ---- bitwise equality -------------------------------------------------------------

struct Trace {
  std::vector<float> losses;
  std::vector<std::vector<float>> grads;  // reduced gradients before each optimizer step
  std::vector<float> weights;             // fp32 master weights at the end
};

// Steps on batches that change with the step, so every step's gradients differ.
Trace run(const Config& cfg, int steps) {
  auto e = initialize(cfg, make_model(cfg), quiet());
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  Trace t;
  for (int s = 0; s < steps; ++s)
    for (int k = 0; k < cfg.gradient_accumulation_steps; ++k) {
      for (size_t i = 0; i < n; ++i) {
        in[i] = int32_t((i * 7 + size_t(s) * 5 + size_t(k) * 11) % size_t(cfg.model.vocab_size));
        tgt[i] = int32_t((i * 3 + size_t(s) * 13 + 1) % size_t(cfg.model.vocab_size));
      }
      t.losses.push_back(e->forward(in, tgt));
      e->backward();
      if (k == cfg.gradient_accumulation_steps - 1) {
        e->zero().finish_gradients();
        t.grads.push_back(e->zero().grads_to_host());
      }
      e->step();
    }
  t.weights = e->gather_parameters();
  return t;
}

nlohmann::json training_patch(int stage, const std::string& dtype) {
  nlohmann::json p = test::zero_training_patch(stage, dtype);
  p["hybrid"] = {{"model", {{"n_layer", 3}}}};
  return p;
}

// stage, dtype, checkpointing (the activation_checkpointing patch)
using BitwiseCase = std::tuple<int, std::string, std::string>;
class CheckpointedTraining : public ::testing::TestWithParam<BitwiseCase> {};

nlohmann::json checkpointing_patch(const std::string& which) {
  if (which == "every")
    return {{"activation_checkpointing", nlohmann::json::object()}};  // DeepSpeed's block alone
  if (which == "every2") return {{"hybrid", {{"activation_checkpointing", {{"every", 2}}}}}};
  return {{"activation_checkpointing", {{"cpu_checkpointing", true}}}};  // "host"
}

TEST_P(CheckpointedTraining, GradientsLossesAndWeightsAreBitwiseThoseWithout) {
  const auto& [stage, dtype, which] = GetParam();
  const auto plain = test::tiny_config(training_patch(stage, dtype));
  auto patch = training_patch(stage, dtype);
  patch.merge_patch(checkpointing_patch(which));
  const auto ckpt = test::tiny_config(patch);
  ASSERT_TRUE(engine::checkpoint_plan(ckpt).any());
  const Trace a = run(plain, 4), b = run(ckpt, 4);
  EXPECT_EQ(a.losses, b.losses);
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t s = 0; s < a.grads.size(); ++s) EXPECT_TRUE(a.grads[s] == b.grads[s]) << "step " << s;
  EXPECT_TRUE(a.weights == b.weights);
  EXPECT_NE(a.losses.front(), a.losses.back()) << "the runs trained";
}

INSTANTIATE_TEST_SUITE_P(
    StagesDtypesPolicies, CheckpointedTraining,
    ::testing::Values(BitwiseCase{0, "fp32", "every"}, BitwiseCase{1, "fp32", "every"},
                      BitwiseCase{2, "fp32", "every"}, BitwiseCase{3, "fp32", "every"},
                      BitwiseCase{0, "bf16", "every"}, BitwiseCase{3, "bf16", "every"},
                      BitwiseCase{0, "fp16", "every"}, BitwiseCase{3, "fp16", "every"},
                      BitwiseCase{2, "bf16", "every2"}, BitwiseCase{3, "fp32", "every2"},
                      BitwiseCase{0, "fp32", "host"}, BitwiseCase{3, "bf16", "host"}),
    [](const auto& info) {
      return "stage" + std::to_string(std::get<0>(info.param)) + "_" + std::get<1>(info.param) +
             "_" + std::get<2>(info.param);
    });

// ---- the boundaries ZeRO-3 sees -----------------------------------------------------

// Every module boundary, in order: 'f' forward, 'b' backward, 'r' recompute.
class BoundaryRecorder final : public engine::ModuleHooks {
 public:
  std::vector<std::pair<char, int>> calls;
  void before_forward(const engine::Module& m) override { calls.emplace_back('f', m.id()); }
  void before_backward(const engine::Module& m) override { calls.emplace_back('b', m.id()); }
  void before_recompute(const engine::Module& m) override { calls.emplace_back('r', m.id()); }
};

// Parameters and gradients in two flat zeroed fp32 buffers.
class FlatParams final : public engine::ParamAccess {
 public:
  FlatParams(engine::TrackingAllocator& alloc, int64_t n)
      : params_(test::one_buffer(alloc, size_t(n) * 4, MemCategory::params)),
        grads_(test::one_buffer(alloc, size_t(n) * 4, MemCategory::grads)) {}
  const void* param(const engine::ParamSpec& p) override {
    return params_.view("test").as<float>() + p.offset;
  }
  void* grad(const engine::ParamSpec& p) override {
    return grads_.view("test").as<float>() + p.offset;
  }

 private:
  engine::LayoutBuffers params_, grads_;
};

// GPT2::backward_order is what the memory model replays for ZeRO-3's gathering:
// it must be the boundaries a real backward pass crosses, recomputation included.
TEST(CheckpointedBackward, CrossesTheBoundariesTheMemoryModelReplays) {
  for (const std::string policy : {"none", "every", "every2", "host"}) {
    auto patch = model_layers(3);
    if (policy != "none") patch.merge_patch(checkpointing_patch(policy));
    const Config cfg = test::tiny_config(patch);
    const auto plan = engine::checkpoint_plan(cfg);
    auto backend = kernels::make_cpu_backend();
    engine::TrackingAllocator dev(*backend, 0), host(*backend, *backend, 0);
    engine::GPT2 model(cfg.model, cfg.padded_vocab());
    engine::ModuleTree tree(model);
    const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.model.seq_len;
    model.bind(dev, B, T, kernels::DType::f32, plan, &host);
    FlatParams params(dev, tree.param_count());
    BoundaryRecorder rec;
    engine::ExecutionContext ctx(*backend, kernels::DType::f32, B, T);
    ctx.set_param_access(&params);
    ctx.set_hooks(&rec);
    ctx.set_batch(model.tokens_buffer(), model.targets_buffer());
    const std::vector<int32_t> zeros(size_t(B) * T, 0);
    backend->copy_from_host(model.tokens_buffer(), zeros.data(), zeros.size() * 4);
    backend->copy_from_host(model.targets_buffer(), zeros.data(), zeros.size() * 4);

    ctx.forward(model);
    ASSERT_EQ(rec.calls.size(), tree.modules().size()) << policy;
    for (size_t i = 0; i < rec.calls.size(); ++i)
      EXPECT_EQ(rec.calls[i], std::make_pair('f', int(i))) << policy << ": forward in tree order";
    rec.calls.clear();
    ctx.backward(model);
    std::vector<int> expected, got;
    for (const auto* m : model.backward_order(plan)) expected.push_back(m->id());
    size_t recomputed = 0;
    for (auto [kind, id] : rec.calls) {
      got.push_back(id);
      recomputed += kind == 'r' ? 1 : 0;
      EXPECT_NE(kind, 'f') << policy << ": no plain forward inside backward";
    }
    EXPECT_EQ(got, expected) << policy;
    // Each checkpointed block is entered, then ln_1, attn (3), ln_2, mlp (c_fc, gelu).
    EXPECT_EQ(recomputed, size_t(plan.count()) * 10) << policy;
    EXPECT_EQ(ctx.recomputing(), false);
  }
}

}  // namespace
}  // namespace hybrid
