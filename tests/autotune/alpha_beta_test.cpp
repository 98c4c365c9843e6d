// The alpha–beta fit of collective times against samples made from known
// latencies and link rates (exact and perturbed), and the cluster rates that
// carry probe figures to world sizes and ranks per host the probe never ran.
#include "autotune/alpha_beta.h"

#include <gtest/gtest.h>

#include <cmath>

#include "autotune/cluster_rates.h"
#include "profiler/comm_tracer.h"

namespace hybrid::autotune {
namespace {

using profiler::BandwidthSample;
using profiler::CollectiveKind;

// The closed form, written out per op (ring schedule, nccl-tests bus factors).
double ring_time(CollectiveKind k, double bytes, int p, double alpha, double busbw) {
  const double n = p;
  switch (k) {
    case CollectiveKind::all_reduce:
      return 2 * (n - 1) * alpha + bytes * 2 * (n - 1) / n / busbw;
    default:
      return (n - 1) * alpha + bytes * (n - 1) / n / busbw;
  }
}

BandwidthSample sample(CollectiveKind k, uint64_t bytes, int p, double t,
                       const char* link = "intra_host") {
  const double algbw = double(bytes) / t / 1e9;
  return {std::string(profiler::collective_name(k)), bytes, algbw,
          algbw * profiler::bus_factor(k, p),        link,  p};
}

std::vector<BandwidthSample> ring_samples(CollectiveKind k, std::initializer_list<int> worlds,
                                          double alpha, double busbw, double wobble = 0) {
  std::vector<BandwidthSample> out;
  int i = 0;
  for (int p : worlds)
    for (uint64_t b = 4096; b <= (uint64_t(16) << 20); b *= 4, ++i) {
      const double t = ring_time(k, double(b), p, alpha, busbw) * (1 + (i % 2 ? wobble : -wobble));
      out.push_back(sample(k, b, p, t));
    }
  return out;
}

TEST(AlphaBeta, RecoversLatencyAndLinkRateFromExactSamples) {
  for (auto k :
       {CollectiveKind::all_reduce, CollectiveKind::reduce_scatter, CollectiveKind::all_gather}) {
    const auto fits = fit_alpha_beta(ring_samples(k, {2, 4}, 25e-6, 3e9), 2);
    ASSERT_EQ(fits.size(), 1u);
    const AlphaBeta& f = fits[0];
    EXPECT_NEAR(f.alpha_s, 25e-6, 25e-6 * 1e-9);
    EXPECT_NEAR(f.busbw_bytes_per_s, 3e9, 3e9 * 1e-9);
    EXPECT_EQ(f.samples, 14);
    EXPECT_EQ(f.ranks, (std::vector<int>{2, 4}));
    EXPECT_LT(f.max_rel_error, 1e-9);
    // Carried to 64 ranks: the closed form.
    EXPECT_NEAR(f.time_s(8 << 20, 64), ring_time(k, 8 << 20, 64, 25e-6, 3e9), 1e-12);
  }
}

// Measurement noise of ±5 % moves the fitted figures by about as much, and the
// worst residual reports it (up to the noise of two samples).
TEST(AlphaBeta, PerturbedSamplesGiveFiguresWithinTheirNoise) {
  const auto fits =
      fit_alpha_beta(ring_samples(CollectiveKind::all_reduce, {2}, 40e-6, 1e9, 0.05), 2);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_NEAR(fits[0].alpha_s, 40e-6, 40e-6 * 0.10);
  EXPECT_NEAR(fits[0].busbw_bytes_per_s, 1e9, 1e9 * 0.10);
  EXPECT_GT(fits[0].max_rel_error, 0.03);
  EXPECT_LT(fits[0].max_rel_error, 0.15);
}

// Samples that only a latency explains (the same time at every size) give no
// bandwidth term, never a negative one.
TEST(AlphaBeta, TermsStayNonNegative) {
  std::vector<BandwidthSample> flat;
  for (uint64_t b : {4096u, 16384u, 65536u})
    flat.push_back(sample(CollectiveKind::all_gather, b, 2, 1e-3));
  const auto fits = fit_alpha_beta(flat, 2);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].busbw_bytes_per_s, 0.0);
  EXPECT_NEAR(fits[0].alpha_s, 1e-3, 1e-3 * 0.01);  // one step at 2 ranks
}

// A token-bucket shaper (tc tbf, 1 Gbit/s with a 500 KB burst on a 10 Gbit/s
// wire): messages inside the burst cross at line rate, larger ones at the
// shaped rate. The fit takes the shaped rate, which decides ZeRO's buckets.
TEST(AlphaBeta, ATokenBucketsBurstIsNotTakenForTheLinkRate) {
  const double line = 1.25e9, shaped = 0.125e9, burst = 500e3, latency = 30e-6;
  std::vector<BandwidthSample> s;
  for (uint64_t b = 4096; b <= (uint64_t(64) << 20); b *= 4) {
    const double wire = double(b) / 2;  // all-gather at 2 ranks: half the message crosses
    const double t = latency + std::min(wire, burst) / line + std::max(0.0, wire - burst) / shaped;
    s.push_back(sample(CollectiveKind::all_gather, b, 2, t));
  }
  const auto fits = fit_alpha_beta(s, 2);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_NEAR(fits[0].busbw_bytes_per_s, shaped, 0.05 * shaped);
  EXPECT_NEAR(fits[0].alpha_s, latency, 0.5 * latency);
}

TEST(AlphaBeta, OneFitPerOpAndLinkAndStoredRanksDefaultToTheProbeWorld) {
  auto s = ring_samples(CollectiveKind::all_reduce, {2}, 20e-6, 5e9);
  for (auto& x : s) x.ranks = 0;  // a probe stored before schema v7
  auto across = ring_samples(CollectiveKind::all_reduce, {2}, 80e-6, 0.1e9);
  for (auto& x : across) x.link = "inter_host";
  s.insert(s.end(), across.begin(), across.end());
  const auto fits = fit_alpha_beta(s, 2);
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(fits[0].link, "inter_host");
  EXPECT_NEAR(fits[0].busbw_bytes_per_s, 0.1e9, 1e-3);
  EXPECT_EQ(fits[1].link, "intra_host");
  EXPECT_NEAR(fits[1].alpha_s, 20e-6, 1e-12);
  EXPECT_EQ(fits[1].ranks, std::vector<int>{2});
}

ClusterRates probed(std::vector<BandwidthSample> s, int world) {
  ClusterRates r = default_rates(kernels::BackendKind::cpu, world);
  r.bandwidth = std::move(s);
  r.fits = fit_alpha_beta(r.bandwidth, world);
  return r;
}

TEST(ClusterRates, MeasuredWorldInterpolatesOtherWorldsUseTheFit) {
  // Measured at 2 ranks with a little noise: at 2 ranks the sample itself,
  // at 16 ranks the fitted closed form.
  const auto samples = ring_samples(CollectiveKind::all_reduce, {2}, 30e-6, 2e9, 0.02);
  const ClusterRates r = probed(samples, 2);
  const auto& s = samples[3];
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_reduce, s.bytes, 2),
              double(s.bytes) / (s.algbw_gbps * 1e9), 1e-15);
  EXPECT_NEAR(r.collective_s(CollectiveKind::all_reduce, s.bytes),  // 0: as measured
              double(s.bytes) / (s.algbw_gbps * 1e9), 1e-15);
  const AlphaBeta& f = r.fits.at(0);
  EXPECT_DOUBLE_EQ(r.collective_s(CollectiveKind::all_reduce, 1 << 20, 16),
                   30 * f.alpha_s + double(1 << 20) * 2 * 15 / 16 / f.busbw_bytes_per_s);
  // An op the probe skipped: all-reduce's alpha and busbw on its own ring.
  EXPECT_DOUBLE_EQ(r.collective_s(CollectiveKind::reduce_scatter, 1 << 20, 16),
                   15 * f.alpha_s + double(1 << 20) * 15 / 16 / f.busbw_bytes_per_s);
  // A pipeline stage's send: one step and the whole message over one link, whatever the group.
  EXPECT_DOUBLE_EQ(r.collective_s(CollectiveKind::send, 1 << 20, 16),
                   f.alpha_s + double(1 << 20) / f.busbw_bytes_per_s);
}

TEST(ClusterRates, TheTrialsLinkClassPicksItsFit) {
  auto s = ring_samples(CollectiveKind::all_reduce, {2}, 10e-6, 10e9);
  auto across = ring_samples(CollectiveKind::all_reduce, {2}, 10e-6, 0.125e9);
  for (auto& x : across) x.link = "inter_host";
  s.insert(s.end(), across.begin(), across.end());
  ClusterRates r = probed(s, 2);
  const double intra = r.collective_s(CollectiveKind::all_reduce, 64 << 20, 8);
  r.link = "inter_host";
  const double inter = r.collective_s(CollectiveKind::all_reduce, 64 << 20, 8);
  EXPECT_NEAR(intra, ring_time(CollectiveKind::all_reduce, 64 << 20, 8, 10e-6, 10e9), 1e-12);
  EXPECT_NEAR(inter, ring_time(CollectiveKind::all_reduce, 64 << 20, 8, 10e-6, 0.125e9), 1e-12);
}

// CPU ranks share their host's cores: 2 ranks measured 10 GFLOP/s each, so 8
// on the host get a quarter of that; a GPU rank keeps its own rate.
TEST(ClusterRates, RankRateSharesTheHostsCores) {
  ClusterRates r = default_rates(kernels::BackendKind::cpu, 2);
  r.gemm_flops_per_s = 10e9;
  r.gemm_ranks = 2;
  EXPECT_EQ(r.rank_flops_per_s(), 10e9);  // ranks_per_host 0: as measured
  r.ranks_per_host = 8;
  EXPECT_DOUBLE_EQ(r.rank_flops_per_s(), 2.5e9);
  r.ranks_per_host = 1;
  EXPECT_DOUBLE_EQ(r.rank_flops_per_s(), 20e9);
  ClusterRates g = default_rates(kernels::BackendKind::cuda, 2);
  g.ranks_per_host = 8;
  EXPECT_EQ(g.rank_flops_per_s(), g.gemm_flops_per_s);
}

// 2 ranks measured on a 2-CPU host; 8 ranks there take turns 4 to a CPU, so
// every collective (its copies, its ring steps) stretches 4 times; 2 ranks
// per host of a 16-CPU cluster do not; a GPU rank never.
TEST(ClusterRates, OversubscribedHostsStretchCollectives) {
  ClusterRates r = probed(ring_samples(CollectiveKind::all_reduce, {2}, 30e-6, 2e9), 2);
  r.gemm_ranks = 2;
  r.host_cpus = 2;
  const double measured = r.collective_s(CollectiveKind::all_reduce, 1 << 20, 8);
  r.ranks_per_host = 8;
  EXPECT_DOUBLE_EQ(r.oversubscription(), 4.0);
  EXPECT_DOUBLE_EQ(r.collective_s(CollectiveKind::all_reduce, 1 << 20, 8), 4 * measured);
  r.ranks_per_host = 2;
  EXPECT_DOUBLE_EQ(r.oversubscription(), 1.0);
  r.host_cpus = 0;  // unknown: as measured
  r.ranks_per_host = 8;
  EXPECT_DOUBLE_EQ(r.oversubscription(), 1.0);
  r.host_cpus = 2;
  r.shared_cores = false;
  EXPECT_DOUBLE_EQ(r.oversubscription(), 1.0);
}

}  // namespace
}  // namespace hybrid::autotune
