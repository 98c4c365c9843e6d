// The 1-bit optimizers' error feedback in tracked memory
// (engine/optim/compression_errors.h), on 2 MPI ranks: an optimizer whose
// errors live in a TrackingAllocator's buffers ends bit for bit where one that
// owns them does, through warm-up, compression and a checkpoint load (which
// zeroes them; in the compressed phase but for 1-bit LAMB), and the allocator holds exactly their
// layout.
#include <fmt/format.h>

#include "engine/optim/compression_errors.h"
#include "engine/optim/optimizer.h"
#include "kernels/registry.h"
#include "mpi_test_harness.h"
#include "onebit_problem.h"

namespace hybrid::test {
namespace {

struct Outcome {
  std::vector<float> params;
  uint64_t tracked_bytes = 0;  // the allocator's optimizer bytes while the optimizer lives
};

Outcome train(const engine::OptimizerConfig& cfg, const std::vector<int64_t>& starts,
              Communicator& comm, bool tracked) {
  auto backend = kernels::make_cpu_backend();
  engine::TrackingAllocator alloc(*backend, 0);
  auto opt = engine::make_optimizer(cfg, starts, &comm, {{kMaskBegin, kMaskEnd}});
  auto* errors = dynamic_cast<engine::TracksCompressionErrors*>(opt.get());
  EXPECT_NE(errors, nullptr) << cfg.type;
  if (tracked && errors) errors->track_errors_in(alloc);
  const size_t total = size_t(starts.back());
  std::vector<float> p(total), state(size_t(opt->state_floats_per_param()) * total, 0.0f);
  for (size_t i = 0; i < total; ++i) p[i] = float(0.1 * std::sin(double(i) + 1.0));
  for (int s = 1; s <= 16; ++s) {
    std::vector<float> g = onebit_gradient(p, comm.rank(), s);
    engine::OptimizerStepArgs a;
    a.lr = 1e-2f, a.step = s, a.grad = g.data(), a.master = p.data(), a.state = state.data();
    a.n = total;
    if (opt->reduces_gradients(s)) {
      comm.all_reduce(g.data(), total, DType::f32, ReduceOp::sum);
      a.grad_scale = 1.0f / float(comm.world_size());
    }
    // Errors back to zero; 1-bit LAMB resumes only before its freeze (its
    // frozen coefficients are not in checkpoints).
    if (s == (cfg.type == "OneBitLamb" ? 3 : 10)) opt->state_loaded();
    opt->step(*backend, a);
  }
  return {p, alloc.stats().current[size_t(engine::MemCategory::optimizer)]};
}

TEST_F(MpiTest, TrackedErrorsGiveTheOwnedErrorsParametersAndHoldTheirLayout) {
  std::vector<int64_t> starts = {0};
  for (int n : kSizes) starts.push_back(starts.back() + n);
  for (const char* type : {"OneBitAdam", "ZeroOneAdam", "OneBitLamb"}) {
    engine::OptimizerConfig cfg;
    cfg.type = type;
    cfg.freeze_step = 4, cfg.var_freeze_step = 4;
    const Outcome owned = train(cfg, starts, comm(), false);
    const Outcome tracked = train(cfg, starts, comm(), true);
    EXPECT_EQ(tracked.params, owned.params) << type;
    EXPECT_EQ(owned.tracked_bytes, 0u) << type;
    const auto layout =
        engine::compression_layout(engine::compressed_buffers(type, starts, world()), world());
    EXPECT_EQ(tracked.tracked_bytes,
              layout.resident_bytes()[size_t(engine::MemCategory::optimizer)])
        << type;
    EXPECT_GT(tracked.tracked_bytes, 0u) << type;
  }
}

}  // namespace
}  // namespace hybrid::test

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 300); }
