// DeepSpeed's FusedLamb (deepspeed/ops/lamb): Adam moments, weight decay added
// to the update u = m / (sqrt(v) + eps) + wd·w, and a trust ratio per parameter
// tensor, ||w|| / ||u|| clamped to [min_coeff, max_coeff] (1 when either norm is
// 0); w −= lr · sqrt(1 − β2^t) / (1 − β1^t) · ratio · u with bias correction.
//
// The norms are whole-tensor norms. A call covers a flat range [first, first+n)
// that may start or end inside a tensor (ZeRO shards, offload chunks), so pass 1
// adds each tensor's partial Σw², Σu² into its slot of the statistics and the
// caller sums them over every part and rank before pass 2 (optimizer.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "engine/optim/optimizer.h"

namespace hybrid::engine {

namespace {

class Lamb final : public Optimizer {
 public:
  Lamb(const OptimizerConfig& cfg, std::vector<int64_t> starts) : cfg_(cfg) {
    if (starts.empty() || starts.front() != 0 || !std::is_sorted(starts.begin(), starts.end()))
      throw std::invalid_argument(
          "lamb: tensor starts must begin at 0 and increase, ending with the parameter count");
    bounds_ = std::move(starts);
    // Past the parameter count: ZeRO's padding, a segment of its own.
    bounds_.push_back(std::numeric_limits<int64_t>::max());
  }
  std::string name() const override { return "Lamb"; }
  int state_floats_per_param() const override { return 2; }  // m, v
  size_t stats_size() const override { return 2 * segments(); }

  void gather_stats(kernels::Backend& backend, const OptimizerStepArgs& a, double* stats) override {
    const auto [first_segment, local] = local_bounds(a);
    backend.lamb_moments(params(a), a.master, a.state, a.state + a.n, a.grad_dtype, a.grad,
                         a.grad_scale, local.data(), int(local.size()) - 1,
                         stats + 2 * first_segment);
  }

  void step(kernels::Backend& backend, const OptimizerStepArgs& a) override {
    if (!a.stats)
      throw std::logic_error("lamb: step() needs the statistics of gather_stats (two passes)");
    const auto [first_segment, local] = local_bounds(a);
    std::vector<float> coeffs(local.size() - 1);
    for (size_t k = 0; k < coeffs.size(); ++k)
      coeffs[k] = trust_ratio(a.stats + 2 * (first_segment + k));
    backend.lamb_update(params(a), a.master, a.state, a.state + a.n, local.data(),
                        int(coeffs.size()), coeffs.data(), a.param_dtype, a.param_out);
  }

 private:
  size_t segments() const { return bounds_.size() - 1; }

  kernels::LambParams params(const OptimizerStepArgs& a) const {
    return {moment_params(cfg_, a), cfg_.eps_inside_sqrt};
  }

  // DeepSpeed's part 3: ratio of the norms in fp32, clamped; 1 when either is 0.
  float trust_ratio(const double* sums) const {
    const float w = float(std::sqrt(sums[0])), u = float(std::sqrt(sums[1]));
    if (w == 0.0f || u == 0.0f) return 1.0f;
    float r = w / u;
    if (r > cfg_.max_coeff) r = cfg_.max_coeff;
    if (r < cfg_.min_coeff) r = cfg_.min_coeff;
    return r;
  }

  // The segments [first, first + n) meets: the index of the first one, and the
  // cut points relative to `first` (0 first, n last).
  std::pair<size_t, std::vector<int64_t>> local_bounds(const OptimizerStepArgs& a) const {
    const int64_t lo = a.first, hi = a.first + int64_t(a.n);
    if (lo < 0) throw std::invalid_argument(fmt::format("lamb: negative range start {}", lo));
    const size_t k0 =
        size_t(std::upper_bound(bounds_.begin(), bounds_.end(), lo) - bounds_.begin()) - 1;
    std::vector<int64_t> local = {0};
    for (size_t k = k0; local.back() < int64_t(a.n); ++k)
      local.push_back(std::min(bounds_[k + 1], hi) - lo);
    return {k0, std::move(local)};
  }

  OptimizerConfig cfg_;
  std::vector<int64_t> bounds_;  // segment k is [bounds_[k], bounds_[k + 1])
};

}  // namespace

std::unique_ptr<Optimizer> make_lamb(const OptimizerConfig& cfg,
                                     std::vector<int64_t> tensor_starts) {
  return std::make_unique<Lamb>(cfg, std::move(tensor_starts));
}

}  // namespace hybrid::engine
