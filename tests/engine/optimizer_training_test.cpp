// Lamb and SGD inside the engine: a tiny GPT-2 trains 25 steps while a naive
// double-precision reference (written here, per element and per parameter
// tensor, from DeepSpeed's FusedLamb and torch.optim.SGD) follows the same
// gradients; the weights agree. Then: the offloaded optimizer gives the same
// bits as the on-device one, checkpoints resume bit for bit (the SGD momentum
// buffer and Lamb's moments are saved), and OneCycle's momentum reaches the
// optimizer.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <tuple>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::OptimizerStepArgs;
using test::quiet;

// The same micro-batches every step: a sequence to memorise, so the loss falls.
std::vector<float> run_steps(Engine& e, int steps) {
  return test::train_on_changing_batches(e, steps, /*same_every_step=*/true);
}

// The update rules, in double, over the whole flat parameter vector.
struct Reference {
  virtual ~Reference() = default;
  virtual void step(const std::vector<double>& g, const OptimizerStepArgs& a) = 0;
  std::vector<double> w;
};

// torch.optim.SGD.
struct SgdReference final : Reference {
  engine::OptimizerConfig c;
  std::vector<double> buf;
  void step(const std::vector<double>& g, const OptimizerStepArgs& a) override {
    buf.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      double d = g[i] + c.weight_decay * w[i];
      if (c.momentum != 0.0f) {
        buf[i] = a.step == 1 ? d : c.momentum * buf[i] + (1.0 - c.dampening) * d;
        d = c.nesterov ? d + c.momentum * buf[i] : buf[i];
      }
      w[i] -= double(a.lr) * d;
    }
  }
};

// DeepSpeed's FusedLamb, tensor by tensor (from the model's parameter list).
struct LambReference final : Reference {
  engine::OptimizerConfig c;
  std::vector<std::pair<int64_t, int64_t>> tensors;  // [begin, end)
  std::vector<double> m, v;
  std::vector<double> ratios;  // of the last step, per tensor
  // A schedule written out by the test: (lr, beta1, beta2) of update t (1-based);
  // unset: the engine's lr and the configured betas.
  std::function<std::tuple<double, double, double>(int64_t t)> schedule;
  void step(const std::vector<double>& g, const OptimizerStepArgs& a) override {
    m.resize(w.size()), v.resize(w.size());
    double lr = a.lr, b1 = c.beta1, b2 = c.beta2;
    if (schedule) std::tie(lr, b1, b2) = schedule(a.step);
    const double step_size = c.bias_correction ? lr * std::sqrt(1 - std::pow(b2, double(a.step))) /
                                                     (1 - std::pow(b1, double(a.step)))
                                               : lr;
    ratios.clear();
    for (const auto& [b, e] : tensors) {
      double w2 = 0, u2 = 0;
      std::vector<double> u(size_t(e - b));
      for (int64_t i = b; i < e; ++i) {
        const size_t k = size_t(i);
        m[k] = b1 * m[k] + (1 - b1) * g[k];
        v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
        u[size_t(i - b)] = m[k] / (std::sqrt(v[k]) + c.eps) + c.weight_decay * w[k];
        w2 += w[k] * w[k];
        u2 += u[size_t(i - b)] * u[size_t(i - b)];
      }
      double r = 1.0;
      if (w2 > 0 && u2 > 0)
        r = std::clamp(std::sqrt(w2 / u2), double(c.min_coeff), double(c.max_coeff));
      ratios.push_back(r);
      for (int64_t i = b; i < e; ++i) w[size_t(i)] -= step_size * r * u[size_t(i - b)];
    }
  }
};

// A client optimizer that hands the gradients it is given to the reference,
// then lets the real optimizer run (CPU backend: host pointers).
class Follower final : public engine::Optimizer {
 public:
  Follower(std::unique_ptr<engine::Optimizer> real, Reference& ref)
      : real_(std::move(real)), ref_(ref) {}
  std::string name() const override { return real_->name(); }
  int state_floats_per_param() const override { return real_->state_floats_per_param(); }
  size_t stats_size() const override { return real_->stats_size(); }
  void gather_stats(kernels::Backend& b, const OptimizerStepArgs& a, double* stats) override {
    follow(a);
    real_->gather_stats(b, a, stats);
  }
  void step(kernels::Backend& b, const OptimizerStepArgs& a) override {
    if (real_->stats_size() == 0) follow(a);
    real_->step(b, a);
    last_ = a;
  }
  const OptimizerStepArgs& last() const { return last_; }

 private:
  void follow(const OptimizerStepArgs& a) {
    EXPECT_EQ(a.first, 0);  // one process, stage 0: the whole range in one call
    std::vector<double> g(ref_.w.size());
    const float* grad = static_cast<const float*>(a.grad);
    for (size_t i = 0; i < g.size(); ++i) g[i] = double(grad[i]) * a.grad_scale;
    ref_.step(g, a);
  }
  std::unique_ptr<engine::Optimizer> real_;
  Reference& ref_;
  OptimizerStepArgs last_;
};

double max_rel_diff(const std::vector<float>& got, const std::vector<double>& want) {
  double d = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    d = std::max(d, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return d / scale;
}

std::vector<std::pair<int64_t, int64_t>> tensors_of(const Engine& e) {
  std::vector<std::pair<int64_t, int64_t>> t;
  for (const auto* p : e.module_tree().params()) t.emplace_back(p->offset, p->offset + p->numel);
  return t;
}

// Trains 25 steps with the follower; returns the max relative weight difference.
double follow_training(const nlohmann::json& patch, Reference& ref,
                       std::function<std::unique_ptr<engine::Optimizer>(const Engine&)> make) {
  auto cfg = test::tiny_config(patch);
  auto probe = initialize(cfg, make_model(cfg), quiet());
  EngineOptions o = quiet();
  auto follower = std::make_unique<Follower>(make(*probe), ref);
  o.optimizer = std::move(follower);
  auto e = initialize(cfg, make_model(cfg), std::move(o));
  const auto w0 = e->gather_parameters();
  ref.w.assign(w0.begin(), w0.end());
  const auto losses = run_steps(*e, 25);
  EXPECT_LT(losses.back(), losses.front()) << "it trained";
  const auto w = e->gather_parameters();
  EXPECT_GT(max_rel_diff(w, std::vector<double>(w0.begin(), w0.end())), 1e-3) << "weights moved";
  return max_rel_diff(w, ref.w);
}

TEST(OptimizerTraining, SgdWithMomentumFollowsTheNaiveReference) {
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "nesterov" : "dampening");
    const nlohmann::json opt = {{"type", "SGD"},
                                {"params",
                                 {{"lr", 0.05},
                                  {"momentum", 0.9},
                                  {"dampening", nesterov ? 0.0 : 0.2},
                                  {"weight_decay", 0.01},
                                  {"nesterov", nesterov}}}};
    const auto cfg = test::tiny_config({{"optimizer", opt}});
    SgdReference ref;
    ref.c = cfg.optimizer;
    const double diff = follow_training(
        {{"optimizer", opt}}, ref, [&](const Engine&) { return engine::make_sgd(cfg.optimizer); });
    // 25 steps of fp32 rounding on values whose gradients come from the engine.
    EXPECT_LT(diff, 1e-5);
  }
}

TEST(OptimizerTraining, LambFollowsTheNaiveReferencePerTensor) {
  // wd 0.01 and a low max_coeff make the clamp bite on some tensors.
  const nlohmann::json opt = {
      {"type", "Lamb"},
      {"params", {{"lr", 0.05}, {"weight_decay", 0.01}, {"max_coeff", 0.3}, {"min_coeff", 0.02}}}};
  const auto cfg = test::tiny_config({{"optimizer", opt}});
  LambReference ref;
  ref.c = cfg.optimizer;
  std::vector<int64_t> starts;
  const double diff = follow_training({{"optimizer", opt}}, ref, [&](const Engine& e) {
    ref.tensors = tensors_of(e);
    for (const auto& t : ref.tensors) starts.push_back(t.first);
    starts.push_back(e.param_count());
    return engine::make_lamb(cfg.optimizer, starts);
  });
  EXPECT_LT(diff, 1e-5);
  int at_max = 0, at_min = 0, inside = 0;
  for (double r : ref.ratios) {
    at_max += r == 0.3, at_min += std::abs(r - 0.02) < 1e-9;
    inside += r > 0.02 && r < 0.3;
  }
  EXPECT_GT(at_max + at_min, 0) << "some tensors clamp";
  EXPECT_GT(inside, 0) << "some tensors use their own ratio";
}

// OneCycle drives Lamb's lr and beta1 (beta2 0.99), as DeepSpeed's cycle_momentum
// sets the betas: the reference computes them itself from the closed form.
TEST(OptimizerTraining, OneCycleLrAndMomentumReachLamb) {
  const nlohmann::json patch = {
      {"optimizer", {{"type", "Lamb"}, {"params", {{"lr", 1e-3}, {"betas", {0.5, 0.5}}}}}},
      {"scheduler",
       {{"type", "OneCycle"},
        {"params",
         {{"cycle_min_lr", 1e-4},
          {"cycle_max_lr", 5e-3},
          {"cycle_first_step_size", 8},
          {"cycle_min_mom", 0.8},
          {"cycle_max_mom", 0.95}}}}}};
  const auto cfg = test::tiny_config(patch);
  LambReference ref;
  ref.c = cfg.optimizer;
  // Update t uses the schedule after t − 1 steps: DeepSpeed's last_batch_iteration t − 2,
  // batch index b = t − 1 (construction values at t = 1). A 16-step triangle, then flat.
  ref.schedule = [](int64_t t) {
    const double b = double(t - 1);
    const double scale = b >= 16 ? 0.0 : b <= 8 ? b / 8 : (16 - b) / 8;
    const double mom = t == 1 ? 0.8 : b >= 16 ? 0.95 : 0.95 - 0.15 * scale;
    return std::tuple{1e-4 + (5e-3 - 1e-4) * scale, mom, 0.99};
  };
  const double diff = follow_training(patch, ref, [&](const Engine& e) {
    ref.tensors = tensors_of(e);
    std::vector<int64_t> starts;
    for (const auto& t : ref.tensors) starts.push_back(t.first);
    starts.push_back(e.param_count());
    return engine::make_lamb(cfg.optimizer, starts);
  });
  EXPECT_LT(diff, 1e-5);
}

// ---- offload, checkpoints -----------------------------------------------------

nlohmann::json lamb_patch() {
  return {{"optimizer", {{"type", "Lamb"}, {"params", {{"lr", 3e-3}, {"weight_decay", 0.01}}}}}};
}
nlohmann::json sgd_patch() {
  return {{"optimizer",
           {{"type", "SGD"}, {"params", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true}}}}}};
}

TEST(OptimizerTraining, OffloadGivesTheOnDeviceBits) {
  for (const auto& [name, opt] : {std::pair{"Lamb", lamb_patch()}, std::pair{"SGD", sgd_patch()}}) {
    for (int stage : {0, 2}) {
      SCOPED_TRACE(std::string(name) + ", stage " + std::to_string(stage));
      nlohmann::json on = opt, off = opt;
      on["zero_optimization"] = {{"stage", stage}};
      off["zero_optimization"] = {{"stage", stage}, {"offload_optimizer", {{"device", "cpu"}}}};
      on["bf16"] = off["bf16"] = {{"enabled", true}};
      auto a = initialize(test::tiny_config(on), make_model(test::tiny_config(on)), quiet());
      auto b = initialize(test::tiny_config(off), make_model(test::tiny_config(off)), quiet());
      ASSERT_TRUE(b->zero().optimizer_offloaded());
      // The tiny model's range is several offload chunks, so tensors straddle chunks.
      EXPECT_GT(b->zero().optimizer_range().size(), 3 * 8192);
      EXPECT_EQ(run_steps(*a, 4), run_steps(*b, 4));
      EXPECT_EQ(a->gather_parameters(), b->gather_parameters());
    }
  }
}

TEST(OptimizerTraining, CheckpointsResumeBitwise) {
  nlohmann::json one_cycle = lamb_patch();
  one_cycle["scheduler"] = {
      {"type", "OneCycle"},
      {"params", {{"cycle_min_lr", 1e-4}, {"cycle_max_lr", 3e-3}, {"cycle_first_step_size", 3}}}};
  for (const auto& [name, patch] :
       {std::pair{"SGD momentum", sgd_patch()}, std::pair{"Lamb", lamb_patch()},
        std::pair{"Lamb + OneCycle", one_cycle}}) {
    SCOPED_TRACE(name);
    test::TempDir dir;
    nlohmann::json p = patch;
    p["zero_optimization"] = {{"stage", 1}};
    p["fp16"] = {{"enabled", true}, {"initial_scale_power", 12}};
    const auto cfg = test::tiny_config(p);
    auto a = initialize(cfg, make_model(cfg), quiet());
    const auto all = run_steps(*a, 8);
    auto b = initialize(cfg, make_model(cfg), quiet());
    run_steps(*b, 4);
    b->save_checkpoint(dir.path().string(), "mid");
    auto c = initialize(cfg, make_model(cfg), quiet());
    c->load_checkpoint(dir.path().string());
    const auto rest = run_steps(*c, 4);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(rest[size_t(i)], all[size_t(4 + i)]) << "step " << 5 + i;
    EXPECT_EQ(c->gather_parameters(), a->gather_parameters());
    // Without the saved state the continuation differs: the state matters.
    auto d = initialize(cfg, make_model(cfg), quiet());
    d->load_checkpoint(dir.path().string());
    d->set_parameters(b->gather_parameters());  // same weights, optimizer state reset
    EXPECT_NE(run_steps(*d, 4), rest);
  }
}

}  // namespace
}  // namespace hybrid
