// A naive, single-process simulation of DeepSpeed's compressed all-reduce
// (deepspeed/runtime/comm/nccl.py `compressed_allreduce`) over W ranks, written
// from the algorithm's description without the code under test: plain loops,
// no bit packing, every value and sum in double (DeepSpeed's torch works in
// fp32, ours in fp32 with double norms), and its own padding rule. The tests
// compare engine/comm/compressed_all_reduce against it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace hybrid::test {

class CompressedAllReduceReference {
 public:
  CompressedAllReduceReference(size_t n, int world) : n_(n), world_(size_t(world)) {
    // DeepSpeed's onebit optimizers: divider = W·8/gcd(W, 8), tensors padded to
    // a multiple of W·divider. lcm(W, 8) found by counting up, not by gcd.
    size_t lcm = 8;
    while (lcm % world_ != 0) lcm += 8;
    const size_t multiple = world_ * lcm;
    padded_ = n == 0 ? 0 : ((n + multiple - 1) / multiple) * multiple;
    chunk_ = padded_ / world_;
    worker_.assign(world_, std::vector<double>(padded_, 0.0));
    server_.assign(world_, std::vector<double>(chunk_, 0.0));
  }

  size_t padded() const { return padded_; }
  size_t chunk() const { return chunk_; }
  const std::vector<double>& worker_error(int rank) const { return worker_[size_t(rank)]; }
  const std::vector<double>& server_error(int rank) const { return server_[size_t(rank)]; }
  // The smallest |value| / scale at any sign taken so far (exact zeros aside):
  // near 0, within fp32 rounding of a tie, fp32 code may take the other sign.
  double smallest_margin() const { return margin_; }

  // inputs[r]: rank r's n values. Returns the result every rank should hold.
  std::vector<double> call(const std::vector<std::vector<float>>& inputs) {
    std::vector<double> scales(world_);
    std::vector<std::vector<int>> signs(world_, std::vector<int>(padded_));
    for (size_t r = 0; r < world_; ++r) {
      std::vector<double> m(padded_);
      for (size_t i = 0; i < padded_; ++i)
        m[i] = (i < n_ ? double(inputs[r][i]) : 0.0) + worker_[r][i];
      scales[r] = compress(m, signs[r]);
      worker_[r] = m;
    }
    std::vector<double> server_scales(world_);
    std::vector<int> server_signs(padded_);
    for (size_t j = 0; j < world_; ++j) {  // rank j serves chunk j
      std::vector<double> s(chunk_);
      for (size_t k = 0; k < chunk_; ++k) {
        double avg = 0.0;
        for (size_t r = 0; r < world_; ++r) avg += scales[r] * signs[r][j * chunk_ + k];
        s[k] = avg / double(world_) + server_[j][k];
      }
      std::vector<int> sg(chunk_);
      server_scales[j] = compress(s, sg);
      server_[j] = s;
      std::copy(sg.begin(), sg.end(), server_signs.begin() + ptrdiff_t(j * chunk_));
    }
    std::vector<double> out(n_);
    for (size_t i = 0; i < n_; ++i) out[i] = server_scales[i / chunk_] * server_signs[i];
    return out;
  }

 private:
  // x becomes x − scale·sign(x); returns scale = ‖x‖/√len, sign(0) = +1.
  double compress(std::vector<double>& x, std::vector<int>& sign) {
    double sq = 0.0;
    for (double v : x) sq += v * v;
    const double scale = std::sqrt(sq / double(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      sign[i] = x[i] >= 0.0 ? 1 : -1;
      // Exact zeros (the padding on a first call) are zero in fp32 too.
      if (scale > 0.0 && x[i] != 0.0) margin_ = std::min(margin_, std::abs(x[i]) / scale);
      x[i] -= scale * sign[i];
    }
    return scale;
  }

  size_t n_, world_, padded_ = 0, chunk_ = 0;
  std::vector<std::vector<double>> worker_, server_;
  double margin_ = std::numeric_limits<double>::infinity();
};

// Rank r's input of call `call`: values in ±[0.05, 1]·amplitude(r), never near
// 0, from a fixed hash. The amplitudes (1, 1.9, 3.7, 7.3, …) keep the worker
// scales apart, so that no signed sum of them is near 0 on a server.
inline std::vector<float> compressed_test_input(int rank, int call, size_t n) {
  static constexpr double kAmplitude[] = {1.0, 1.9, 3.7, 7.3, 14.9, 29.3, 61.1, 119.0};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t h = (uint64_t(rank) * 0x9E3779B97F4A7C15ull) ^
                 (uint64_t(call) * 0xC2B2AE3D27D4EB4Full) ^ (uint64_t(i) * 0x165667B19E3779F9ull);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    const double u = double(h % 1'000'000) / 1'000'000.0;  // [0, 1)
    const double mag = 0.05 + 0.95 * u;
    v[i] = float((h >> 40) & 1 ? mag : -mag) * float(kAmplitude[size_t(rank) % 8]);
  }
  return v;
}

}  // namespace hybrid::test
