// DeepSpeed's OnebitLamb (deepspeed/runtime/fp16/onebit/lamb.py), step by step:
//   step 1          its initialization step: counts, updates nothing;
//   steps 2..F      LAMB without bias correction on the averaged gradients: per
//                   tensor u = m/(√v + eps) + wd·p, coefficient ‖p‖/‖u‖ clamped
//                   to [min_coeff, max_coeff] (1 when a norm is 0), p −= lr·c·u;
//                   each tensor's c enters a moving average (coeff_beta) unless it
//                   is exactly 1; at step freeze_step v is copied as the "fresh"
//                   variance (F = max(freeze_step, 2), as 1-bit Adam);
//   steps after F   v and the averaged coefficients frozen; the gradients are not
//                   reduced. At the first such step each tensor gets a scaling
//                   coefficient, the mean over tensors of ‖m‖/√n divided by its
//                   own. Each rank's momentum takes its local gradient, is scaled,
//                   and the momenta of all tensors, flat, with DeepSpeed's padding
//                   (which keeps its value from step to step), cross the 1-bit
//                   compressed all-reduce as one buffer; unscaled, masked, the
//                   gradient rebuilt from it, (m − β1·m_prev)/(1 − β1), feeds the
//                   fresh variance; the factor max(denominator frozen / fresh),
//                   pulled towards 1 by the weight decay's share of the update,
//                   clamped to [factor_min, factor_max] and to ±factor_threshold of
//                   the previous step's, scales the frozen coefficient.
// ZeRO stage 0 only (the config refuses others), so a call sees whole tensors and
// the norms are taken in step() itself, without the two-pass statistics. Every
// pass is a backend op (the warm-up is the backend's Lamb without bias
// correction), so the same code runs on host and device memory; the
// per-tensor scalars live on the host.
// Checkpoints keep m, v and the fresh variance (3 floats a parameter), and in
// meta.json (scalar_state) the per-tensor scalars (averaged coefficient, last
// factor, scaling) and the flat momentum's padding. The compression errors are
// dropped on load, as DeepSpeed does; the scalars are reset if the load is
// before the freeze (DeepSpeed's warm-up starts over) and restored after it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/comm/compressed_all_reduce.h"
#include "engine/optim/compression_errors.h"
#include "engine/optim/optimizer.h"

namespace hybrid::engine {

namespace {

class OneBitLamb final : public Optimizer, public TracksCompressionErrors {
 public:
  OneBitLamb(const OptimizerConfig& cfg, std::vector<int64_t> tensor_starts,
             comm::Communicator& comm, ZeroGradientRanges masked)
      : cfg_(cfg), starts_(std::move(tensor_starts)), comm_(comm), masked_(std::move(masked)) {
    if (starts_.size() < 2 || starts_.front() != 0 ||
        !std::is_sorted(starts_.begin(), starts_.end()))
      throw std::invalid_argument(
          "OneBitLamb: tensor starts must begin at 0 and increase, ending with the parameter "
          "count");
    reset_scalars();
  }

  std::string name() const override { return "OneBitLamb"; }
  int state_floats_per_param() const override { return 3; }  // m, v, the fresh variance
  bool reduces_gradients(int64_t step) const override { return !compressing(step); }
  void track_errors_in(TrackingAllocator& alloc) override {
    const int world = comm_.world_size();
    errors_.track(alloc, compressed_buffers("OneBitLamb", starts_, world), world,
                  compression_flat_floats("OneBitLamb", starts_, world));
  }
  void state_loaded() override {
    errors_.reset();
    padding_.clear();
    scalars_lost_ = true;
  }
  // The frozen coefficients, the last factors, the momentum's scaling and the
  // flat momentum's padding: what DeepSpeed keeps in each parameter's state.
  nlohmann::json scalar_state() const override {
    return {{"coeff_freeze", coeff_freeze_},
            {"last_factor", last_factor_},
            {"scaling", scaling_},
            {"padding", padding_}};
  }
  void load_scalar_state(const nlohmann::json& scalars) override { loaded_ = scalars; }

  void step(kernels::Backend& backend, const OptimizerStepArgs& a) override {
    const auto count = size_t(starts_.back());
    if (a.first != 0 || a.n < count)
      throw std::logic_error(fmt::format(
          "OneBitLamb: a step must cover all {} parameters (ZeRO stage 0), got [{}, {})", count,
          a.first, a.first + int64_t(a.n)));
    if (scalars_lost_) {
      if (compressing(a.step))
        restore_scalars();
      else
        reset_scalars();  // DeepSpeed's load before the freeze: the warm-up starts over
      scalars_lost_ = false;
    }
    if (a.step == 1) return;  // DeepSpeed's initialization step
    if (compressing(a.step))
      compressed_step(backend, a);
    else
      warmup_step(backend, a);
  }

 private:
  bool compressing(int64_t step) const { return step > std::max<int64_t>(cfg_.freeze_step, 2); }
  size_t tensors() const { return starts_.size() - 1; }

  void reset_scalars() {
    coeff_freeze_.assign(tensors(), 0.0);
    last_factor_.assign(tensors(), 1.0);
    scaling_.clear();
  }

  // A resume past the freeze: the checkpoint's scalar_state, checked against
  // this model.
  void restore_scalars() {
    // optimizer_scalars.KEY as numbers; a missing or malformed one is named.
    const auto numbers = [this](const char* key) {
      const auto it = loaded_.is_object() ? loaded_.find(key) : loaded_.end();
      if (it == loaded_.end() || !it->is_array() ||
          !std::all_of(it->begin(), it->end(), [](const auto& x) { return x.is_number(); }))
        throw std::runtime_error(fmt::format(
            "OneBitLamb: resuming after freeze_step needs the checkpoint's optimizer_scalars.{} "
            "as an array of numbers (meta.json; checkpoints saved before they were kept have none)",
            key));
      return it->template get<std::vector<double>>();
    };
    const auto per_tensor = [&](const char* key, bool may_be_empty) {
      auto v = numbers(key);
      if (v.size() != tensors() && !(may_be_empty && v.empty()))
        throw std::runtime_error(fmt::format(
            "OneBitLamb: the checkpoint's optimizer_scalars.{} holds {} values; this model has {} "
            "tensors",
            key, v.size(), tensors()));
      return v;
    };
    coeff_freeze_ = per_tensor("coeff_freeze", false);
    last_factor_ = per_tensor("last_factor", false);
    scaling_ = per_tensor("scaling", true);
    // The padding only where this world size gives it the same length.
    const size_t count = size_t(starts_.back());
    const int world = comm_.world_size();
    const auto padding = numbers("padding");
    if (world > 1 && padding.size() == comm::compressed_padded_size(count, world) - count)
      padding_.assign(padding.begin(), padding.end());
  }

  // LAMB without bias correction (the two passes of the backend's Lamb), the
  // coefficients moving-averaged on the host.
  void warmup_step(kernels::Backend& backend, const OptimizerStepArgs& a) {
    kernels::LambParams lp;
    static_cast<kernels::MomentParams&>(lp) = moment_params(cfg_, a);
    lp.bias_correction = false;
    float *m = a.state, *v = a.state + a.n, *fresh = a.state + 2 * a.n;
    std::vector<double> sums(2 * tensors(), 0.0);
    backend.lamb_moments(lp, a.master, m, v, a.grad_dtype, a.grad, a.grad_scale, starts_.data(),
                         segments(), sums.data());
    if (a.step == cfg_.freeze_step) backend.copy(fresh, v, size_t(starts_.back()) * sizeof(float));
    std::vector<float> coeffs(tensors());
    for (size_t t = 0; t < tensors(); ++t) {
      const auto wn = float(std::sqrt(sums[2 * t])), un = float(std::sqrt(sums[2 * t + 1]));
      double c = 1.0;
      if (wn != 0.0f && un != 0.0f)
        c = std::clamp(double(wn / un), double(cfg_.min_coeff), double(cfg_.max_coeff));
      const double beta = cfg_.coeff_beta;
      if (c != 1.0) coeff_freeze_[t] = beta * coeff_freeze_[t] + (1.0 - beta) * c;
      coeffs[t] = float(c);
    }
    backend.lamb_update(lp, a.master, m, v, starts_.data(), segments(), coeffs.data(),
                        a.param_dtype, a.param_out);
  }

  // Each tensor's scaling: the mean of the momentum RMS over tensors, over its own.
  void freeze_scaling(kernels::Backend& backend, const float* m) {
    std::vector<double> sums(tensors(), 0.0), rms(tensors());
    backend.segment_sum_squares(m, starts_.data(), segments(), sums.data());
    double sum = 0.0;
    for (size_t t = 0; t < tensors(); ++t) {
      const auto n = double(starts_[t + 1] - starts_[t]);
      rms[t] = double(float(std::sqrt(sums[t])) / float(std::sqrt(n)));
      sum += rms[t];
    }
    scaling_.resize(tensors());
    for (size_t t = 0; t < tensors(); ++t) scaling_[t] = sum / double(tensors()) / rms[t];
  }

  // The scaled momenta of every rank, flat with DeepSpeed's padding (kept on
  // the host between steps), averaged as one buffer; the masked ranges zeroed.
  void exchange_momentum(kernels::Backend& backend, float* flat, size_t count) {
    const int world = comm_.world_size();
    if (world > 1) {
      const size_t padded = comm::compressed_padded_size(count, world);
      errors_.make({count}, world);  // when untracked
      if (padding_.empty()) padding_.assign(padded - count, 0.0f);
      const size_t padding_bytes = padding_.size() * sizeof(float);
      backend.copy_from_host(flat + count, padding_.data(), padding_bytes);
      const comm::CompressedTensor all{flat, padded};
      comm::compressed_all_reduce(backend, comm_, std::span(&all, 1), errors_.all(),
                                  errors_.exchange());
      backend.copy_to_host(padding_.data(), flat + count, padding_bytes);
    }
    for (const auto& [b, e] : masked_) {
      const int64_t end = std::min<int64_t>(e, int64_t(count));
      if (b < end) backend.zero(flat + b, size_t(end - b) * sizeof(float));
    }
  }

  void compressed_step(kernels::Backend& backend, const OptimizerStepArgs& a) {
    kernels::LambParams lp;
    static_cast<kernels::MomentParams&>(lp) = moment_params(cfg_, a);
    lp.bias_correction = false;
    float *m = a.state, *v = a.state + a.n, *fresh = a.state + 2 * a.n;
    const auto count = size_t(starts_.back());
    float* flat = errors_.flat();
    if (!flat) {  // untracked: host memory
      flat_.resize(comm::compressed_padded_size(count, comm_.world_size()));
      flat = flat_.data();
    }
    if (scaling_.empty()) freeze_scaling(backend, m);
    std::vector<float> scales(scaling_.begin(), scaling_.end());
    backend.onebit_lamb_momentum(lp.beta1, m, a.grad_dtype, a.grad, a.grad_scale, starts_.data(),
                                 segments(), scales.data(), flat);
    exchange_momentum(backend, flat, count);
    std::vector<double> stats(3 * tensors(), 0.0);
    backend.onebit_lamb_refresh(lp, flat, starts_.data(), segments(), scales.data(), m, v, fresh,
                                a.master, stats.data());
    std::vector<float> coeffs(tensors());
    for (size_t t = 0; t < tensors(); ++t)
      coeffs[t] = float(coeff_freeze_[t] * factor(lp, stats, t));
    backend.lamb_update(lp, a.master, m, v, starts_.data(), segments(), coeffs.data(),
                        a.param_dtype, a.param_out);
  }

  // Tensor t's factor from its statistics (onebit_lamb_refresh), bounded.
  double factor(const kernels::MomentParams& mp, const std::vector<double>& stats, size_t t) {
    double f = stats[3 * t];
    if (mp.weight_decay > 0.0f) {
      const float q = float(std::sqrt(stats[3 * t + 1])), u = float(std::sqrt(stats[3 * t + 2]));
      const double ratio = std::min(1.0, double(q / u));
      f = f * ratio + (1.0 - ratio);
    }
    f = std::clamp(f, double(cfg_.factor_min), double(cfg_.factor_max));
    const double threshold = cfg_.factor_threshold;
    f = std::min(f, last_factor_[t] * (1.0 + threshold));
    f = std::max(f, last_factor_[t] * (1.0 - threshold));
    last_factor_[t] = f;
    return f;
  }
  int segments() const { return int(tensors()); }

  OptimizerConfig cfg_;
  std::vector<int64_t> starts_;
  comm::Communicator& comm_;
  ZeroGradientRanges masked_;
  CompressionErrorSet errors_;  // the flat buffer's: tracked, or made at the first compressed step
  std::vector<float> padding_;  // DeepSpeed's padding of the flat momentum
  std::vector<float> flat_;     // the padded flat momentum, untracked (host memory)
  std::vector<double> coeff_freeze_, last_factor_, scaling_;  // per tensor
  bool scalars_lost_ = false;
  nlohmann::json loaded_;  // the last checkpoint's scalar_state
};

}  // namespace

std::unique_ptr<Optimizer> make_onebit_lamb(const OptimizerConfig& cfg,
                                            std::vector<int64_t> tensor_starts,
                                            comm::Communicator& data_parallel,
                                            ZeroGradientRanges masked) {
  return std::make_unique<OneBitLamb>(cfg, std::move(tensor_starts), data_parallel,
                                      std::move(masked));
}

}  // namespace hybrid::engine
