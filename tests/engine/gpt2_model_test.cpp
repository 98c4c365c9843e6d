// Whole-model checks of the GPT-2 built from modules: initial loss, the
// gradient of the full model against finite differences, gradient
// accumulation, tied weights, activation accounting and llm.c round trips.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/data/data_loader.h"
#include "engine/data/synthetic.h"
#include "engine/engine.h"
#include "engine/model/gpt2/llmc_checkpoint.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::Config;

using test::quiet;

engine::DataLoader loader_for(const Config& cfg, int world = 1, int rank = 0) {
  engine::SyntheticSpec spec;
  spec.vocab_size = cfg.model.vocab_size;
  spec.seed = cfg.seed;
  auto data = engine::make_synthetic_data(spec, 1 << 14, 0).train;
  return engine::DataLoader(std::move(data), {cfg.train_micro_batch_size_per_gpu, cfg.model.seq_len,
                                              cfg.gradient_accumulation_steps, world, rank});
}

// Runs `steps` optimizer steps with the Engine API; returns the final weights.
std::vector<float> train(const Config& cfg, int steps) {
  auto e = initialize(cfg, make_model(cfg), quiet());
  auto loader = loader_for(cfg);
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  for (int s = 0; s < steps; ++s)
    for (int k = 0; k < cfg.gradient_accumulation_steps; ++k) {
      loader.fill(s, k, in.data(), tgt.data());
      e->forward(in, tgt);
      e->backward();
      e->step();
    }
  return e->gather_parameters();
}

TEST(Gpt2Model, InitialLossIsLogVocab) {
  // Small random init: the logits are near zero, so each token costs ≈ ln V.
  auto cfg = test::tiny_config({{"hybrid", {{"model", {{"vocab_size", 512}}}}}});
  auto e = initialize(cfg, make_model(cfg), quiet());
  auto loader = loader_for(cfg);
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  loader.fill(0, 0, in.data(), tgt.data());
  const float loss = e->forward(in, tgt);
  EXPECT_NEAR(loss, std::log(512.0), 0.05);  // tolerance: 1 % of ln V
}

TEST(Gpt2Model, GradientMatchesFiniteDifferences) {
  // fp32 central differences on parameters sampled from every tensor; the
  // per-op kernels are checked in double precision in tests/kernels.
  auto cfg = test::tiny_config(
      {{"train_micro_batch_size_per_gpu", 2},
       {"hybrid",
        {{"model",
          {{"n_layer", 1}, {"n_embd", 16}, {"n_head", 2}, {"vocab_size", 32}, {"seq_len", 8}}}}}});
  auto e = initialize(cfg, make_model(cfg), quiet());
  auto loader = loader_for(cfg);
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  loader.fill(0, 0, in.data(), tgt.data());
  const auto theta = e->gather_parameters();
  e->forward(in, tgt);
  e->backward();
  e->zero().finish_gradients();
  const auto grad = e->zero().grads_to_host();

  const float eps = 1e-2f;
  double worst = 0.0;
  int checked = 0;
  for (auto* p : e->module_tree().params()) {
    for (int64_t k : {int64_t(0), p->numel / 3, p->numel - 1}) {
      const size_t i = size_t(p->offset + k);
      if (p->name == "embedding.wte" && int64_t(k / cfg.model.n_embd) >= cfg.model.vocab_size)
        continue;
      auto plus = theta, minus = theta;
      plus[i] += eps;
      minus[i] -= eps;
      e->set_parameters(plus);
      const double lp = e->forward(in, tgt);
      e->set_parameters(minus);
      const double lm = e->forward(in, tgt);
      const double fd = (lp - lm) / (2.0 * eps);
      const double err = std::abs(fd - grad[i]) / (2e-3 + std::abs(fd));
      worst = std::max(worst, err);
      EXPECT_LT(err, 0.05) << p->name << "[" << k << "]: analytic " << grad[i]
                           << ", finite difference " << fd;
      ++checked;
    }
  }
  EXPECT_GE(checked, 3 * 14);
  std::printf("whole-model gradient check: %d parameters, worst relative error %.3g\n", checked,
              worst);
}

// The gradient of step 0's batch as the optimizer sees it: accumulated over
// cfg's micro-batches, before any update.
std::vector<float> batch_gradient(const Config& cfg) {
  auto e = initialize(cfg, make_model(cfg), quiet());
  auto loader = loader_for(cfg);
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  for (int k = 0; k < cfg.gradient_accumulation_steps; ++k) {
    loader.fill(0, k, in.data(), tgt.data());
    e->forward(in, tgt);
    e->backward();
    if (k + 1 < cfg.gradient_accumulation_steps) e->step();  // counts; no update before the last
  }
  e->zero().finish_gradients();
  return e->zero().grads_to_host();
}

// ‖a − b‖₂ / ‖b‖₂.
double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// How far two fp32 computations of one gradient that differ only in the order
// of their sums may drift apart, relative to its norm. A sum of K products
// carries at most γ_K = K·u relative error against Σ|terms| (u = 2⁻²⁴, Higham
// 3.5); a gradient passes a chain of such sums: per block the forward's two
// layernorms, four GEMMs and the attention, the backward's twice as many, plus
// embedding, final layernorm and lm_head. K is at most max(4C, B·T) (the MLP's
// inner length, or a weight gradient's sum over the batch's tokens). The bound
// is worst-case; real rounding errors cancel, and measure far below it.
double reordering_bound(const Config& cfg) {
  const double u = std::ldexp(1.0, -24);
  const int64_t tokens = int64_t(cfg.train_micro_batch_size_per_gpu) *
                         cfg.gradient_accumulation_steps * cfg.model.seq_len;
  const double K = double(std::max<int64_t>(4 * cfg.model.n_embd, tokens));
  const double depth = 2.0 * (7.0 * cfg.model.n_layer + 3.0);
  return depth * K * u;
}

TEST(Gpt2Model, GradientAccumulationEqualsLargeMicroBatch) {
  // 2 × 4 accumulation steps and 8 × 1 see the same samples (stateless loader)
  // and average the same gradients: they differ only in the order of the sums.
  // Compared before the optimizer: Adam's normalisation would turn last-bit
  // differences of small gradients into weight differences of a fraction of
  // the learning rate, which is what failed on AVX2 (issue 26).
  auto a = test::tiny_config(
      {{"train_micro_batch_size_per_gpu", 2}, {"gradient_accumulation_steps", 4}});
  auto b = test::tiny_config(
      {{"train_micro_batch_size_per_gpu", 8}, {"gradient_accumulation_steps", 1}});
  const double bound = reordering_bound(b);
  const auto ga = batch_gradient(a), gb = batch_gradient(b);
  ASSERT_EQ(ga.size(), gb.size());
  const double same = relative_l2(ga, gb);
  EXPECT_LT(same, bound);
  // The comparison sees a real difference: the same batch with one sample
  // dropped (7 of the 8) is far outside the bound.
  auto dropped = test::tiny_config(
      {{"train_micro_batch_size_per_gpu", 7}, {"gradient_accumulation_steps", 1}});
  const double differ = relative_l2(batch_gradient(dropped), gb);
  EXPECT_GT(differ, 10.0 * bound);
  std::printf("accumulated vs one micro-batch: %.3g (bound %.3g); one sample dropped: %.3g\n", same,
              bound, differ);
}

TEST(Gpt2Model, GradientAccumulationTrainsAlongTheSamePath) {
  // Three steps of plain SGD (an update proportional to the gradient, so no
  // amplification): the runs' weights stay as close as their gradients,
  // relative to how far the weights moved.
  const nlohmann::json sgd = {{"type", "SGD"}, {"params", {{"lr", 0.1}}}};
  auto a = test::tiny_config({{"train_micro_batch_size_per_gpu", 2},
                              {"gradient_accumulation_steps", 4},
                              {"optimizer", sgd}});
  auto b = test::tiny_config({{"train_micro_batch_size_per_gpu", 8},
                              {"gradient_accumulation_steps", 1},
                              {"optimizer", sgd}});
  const auto w0 = [&] {
    auto e = initialize(a, make_model(a), quiet());
    return e->gather_parameters();
  }();
  const int steps = 3;
  const auto wa = train(a, steps), wb = train(b, steps);
  ASSERT_EQ(wa.size(), wb.size());
  std::vector<float> da(wa.size()), db(wb.size());
  for (size_t i = 0; i < wa.size(); ++i) da[i] = wa[i] - w0[i], db[i] = wb[i] - w0[i];
  EXPECT_GT(relative_l2(wb, w0), 1e-3);  // the runs did train
  const double apart = relative_l2(da, db);
  EXPECT_LT(apart, steps * reordering_bound(b));
  std::printf("updates after %d SGD steps: %.3g apart (bound %.3g)\n", steps, apart,
              steps * reordering_bound(b));
}

TEST(Gpt2Model, TiedEmbeddingIsCountedOnceAndReceivesBothGradients) {
  auto cfg = test::tiny_config();
  auto model = std::make_unique<engine::GPT2>(cfg.model, cfg.padded_vocab());
  engine::ModuleTree tree(*model);
  const int64_t C = cfg.model.n_embd, V = cfg.padded_vocab(), L = cfg.model.n_layer,
                T = cfg.model.seq_len;
  // Independent count: embeddings, per block 12C² + 13C, final layernorm; lm_head adds nothing.
  EXPECT_EQ(tree.param_count(), V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C);
  EXPECT_TRUE(model->lm_head->own_params().empty());
  ASSERT_EQ(model->lm_head->used_params().size(), 1u);
  EXPECT_EQ(model->lm_head->used_params()[0], model->embedding->wte());
}

TEST(Gpt2Model, ActivationLayoutMatchesAllocation) {
  auto cfg = test::tiny_config();
  auto e = initialize(cfg, make_model(cfg), quiet());
  const auto stats = e->allocator().stats();
  const auto layout = e->model().activation_layout(
      cfg.train_micro_batch_size_per_gpu, cfg.model.seq_len, cfg.param_dtype(),
      e->backend().attention_saved_bytes(cfg.param_dtype(), cfg.train_micro_batch_size_per_gpu,
                                         cfg.model.seq_len, cfg.model.n_embd, cfg.model.n_head),
      {}, {}, 1);
  EXPECT_EQ(stats.current[size_t(engine::MemCategory::activations)], layout.resident_total());
}

TEST(Gpt2Model, LlmcCheckpointRoundTripReproducesParameters) {
  test::TempDir dir;
  auto cfg = test::tiny_config();
  const auto trained = train(cfg, 2);
  auto e = initialize(cfg, make_model(cfg), quiet());
  engine::Gpt2Weights w;
  engine::gpt2_to_llmc(test::gpt2_of(*e), e->module_tree(), trained, w);
  engine::write_llmc_checkpoint(dir / "model.bin", w);

  auto cfg2 = test::tiny_config({{"hybrid", {{"init_from", dir / "model.bin"}}}});
  std::vector<float> flat;
  engine::gpt2_from_llmc(test::gpt2_of(*e), e->module_tree(),
                         engine::read_llmc_checkpoint(cfg2.init_from), flat);
  e->set_parameters(flat);
  EXPECT_EQ(e->gather_parameters(), trained);  // bit-exact: fp32 file, fp32 master
  // llm.c's layout, independently: qkvw of layer 1 starts after layer 0's 3C·C.
  const int64_t C = cfg.model.n_embd;
  const auto* qkv1 = test::gpt2_of(*e).blocks[1]->c_attn;
  const float first = trained[size_t(qkv1->own_params()[0]->offset)];
  EXPECT_EQ(w.qkvw[size_t(3 * C * C)], first);
}

TEST(Gpt2Model, WrongShapeCheckpointIsRefused) {
  test::TempDir dir;
  auto small = test::tiny_config();
  auto e = initialize(small, make_model(small), quiet());
  engine::Gpt2Weights w;
  engine::gpt2_to_llmc(test::gpt2_of(*e), e->module_tree(), e->gather_parameters(), w);
  engine::write_llmc_checkpoint(dir / "small.bin", w);
  auto big = test::tiny_config({{"hybrid", {{"model", {{"n_layer", 3}}}}}});
  auto e2 = initialize(big, make_model(big), quiet());
  std::vector<float> flat;
  try {
    engine::gpt2_from_llmc(test::gpt2_of(*e2), e2->module_tree(),
                           engine::read_llmc_checkpoint(dir / "small.bin"), flat);
    FAIL() << "expected a shape error";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("n_layer 2"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("n_layer 3"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace hybrid
