// Attention's activation memory with the CPU backend's flash-style kernel: each
// layer keeps B·NH·T fp32 (the lse rows) instead of the T×T kernel's B·NH·T²
// (kernels/cpu/attention_materialized.h). Issue 17's target, attention memory at
// T = 1024 at most 1/8 of the T×T kernel's, checked as the memory model predicts
// it at GPT-2 124M shapes and as the engine's allocator measures it in training.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine_test_util.h"
#include "kernels/cpu/attention_materialized.h"

namespace hybrid {
namespace {

using engine::MemCategory;

constexpr int kT = 1024;

nlohmann::json at_1024(int n_layer, int n_embd, int n_head, int vocab, int B) {
  return {{"train_micro_batch_size_per_gpu", B},
          {"hybrid",
           {{"model",
             {{"n_layer", n_layer},
              {"n_embd", n_embd},
              {"n_head", n_head},
              {"vocab_size", vocab},
              {"seq_len", kT}}}}}};
}

// Activation bytes the memory model predicts when each layer's attention keeps `saved`.
uint64_t predicted_activations(const engine::Config& cfg, uint64_t saved) {
  return engine::predict_memory(cfg, 1, saved)[MemCategory::activations];
}

TEST(AttentionMemory, PredictedAtGpt2ShapesIsAtMostAnEighthOfTheTxTKernel) {
  const int B = 4, NH = 12, L = 12;
  const auto cfg = test::tiny_config(at_1024(L, 768, NH, 50257, B));
  const auto be = kernels::make_cpu_backend();
  const uint64_t flash = be->attention_saved_bytes(cfg.param_dtype(), B, kT, 768, NH);
  const uint64_t txt = kernels::cpu::attention_materialized_saved_bytes(B, kT, NH);
  const uint64_t base = predicted_activations(cfg, 0);
  const uint64_t attn_flash = predicted_activations(cfg, flash) - base;
  const uint64_t attn_txt = predicted_activations(cfg, txt) - base;
  EXPECT_EQ(attn_flash, uint64_t(L) * B * NH * kT * 4) << "closed form: L·B·NH·T fp32";
  EXPECT_EQ(attn_txt, uint64_t(L) * B * NH * kT * kT * 4);
  EXPECT_LE(8 * attn_flash, attn_txt);
  std::printf("GPT-2 124M, B 4, T 1024: attention keeps %.2f MiB (T×T kernel: %.0f MiB)\n",
              double(attn_flash) / (1 << 20), double(attn_txt) / (1 << 20));
}

// Measured: the allocator's activation peak over training steps at T = 1024,
// less the predicted activations without attention's saved state.
TEST(AttentionMemory, MeasuredInTrainingIsTheLseRowsOnly) {
  const int B = 1, NH = 2, L = 2;
  const auto cfg = test::tiny_config(at_1024(L, 32, NH, 64, B));
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  e->allocator().reset_peaks();
  test::train_on_fixed_batch(*e, 2);
  const uint64_t peak = e->allocator().stats().peak[size_t(MemCategory::activations)];
  const uint64_t measured = peak - predicted_activations(cfg, 0);
  EXPECT_EQ(measured, uint64_t(L) * B * NH * kT * 4);
  EXPECT_LE(8 * measured,
            uint64_t(L) * kernels::cpu::attention_materialized_saved_bytes(B, kT, NH));
}

}  // namespace
}  // namespace hybrid
