// hybrid-tune probe --hostfile on test hosts whose links are shaped as the
// issue words it, 1 Gbit/s (tc tbf) and 1 ms of one-way latency (a delay line
// per host, scripts/delay-line.cpp): the inter-host collectives it measures
// run at the shaped rate within 20 %, no small message crosses faster than
// the delay, and the alpha-beta fit finds the delay in each ring step;
// unshaped links measure well above the rate and far below the delay.
// Asserted is what the shaping enforces (no transfer faster than the rate,
// none sooner than the delay) and what unshaped links exceed by far; the
// closeness to the rate and the delay, and the fits, are printed: on a 2-core
// machine shared with other work the ranks' busy-polling starves the network
// stack at times, which slows transfers by whatever the load is (issue 26).
// `predict` for more ranks across hosts uses the probe's inter-host link.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "autotune/alpha_beta.h"
#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_cluster.h"

namespace hybrid::autotune {
namespace {

constexpr double kShapedGBps = 0.125;  // 1 Gbit/s
constexpr double kDelayS = 1e-3;       // one way

struct Measured {
  double best_busbw = 0;           // GB/s, the best inter-host message of 4 MiB and more
  double fitted_busbw = 0;         // GB/s, the inter-host all-reduce's alpha-beta fit
  double fitted_gather_busbw = 0;  // GB/s, the inter-host all-gather's
  double fastest_small_s = 1e9;    // the quickest inter-host collective of 64 KiB or less
  double all_reduce_alpha_s = 0;   // per ring step, the inter-host all-reduce's fit
  std::string predict_output;      // `predict --world 16 --hosts 2` on the probe's store
};

Measured measure_inter_host(const hybrid::test::TestCluster& cluster, const test::TempDir& dir,
                            const std::string& name) {
  const std::string hosts = dir / (name + ".hosts"), db = dir / (name + ".db");
  std::ofstream(hosts) << "hyb-node1 slots=1\nhyb-node2 slots=1\n";
  const auto r = hybrid::test::run_command(
      fmt::format("env {} {} probe --hostfile {} --nprocs 2 --max-message {} --db {}",
                  cluster.env(), test::tune_bin(), hosts, uint64_t(64) << 20, db));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  const auto probe = store.latest_probe(std::nullopt);
  EXPECT_TRUE(probe.has_value());
  Measured m;
  int inter = 0;
  for (const auto& b : probe ? probe->bandwidth : std::vector<profiler::BandwidthSample>{}) {
    inter += b.link == "inter_host";
    if (b.link == "inter_host" && b.bytes >= (uint64_t(4) << 20))
      m.best_busbw = std::max(m.best_busbw, b.busbw_gbps);
    if (b.link == "inter_host" && b.bytes <= (uint64_t(64) << 10) && b.algbw_gbps > 0)
      m.fastest_small_s = std::min(m.fastest_small_s, double(b.bytes) / (b.algbw_gbps * 1e9));
  }
  EXPECT_EQ(inter, 4 * 8) << "4 collectives x 8 sizes (4 KiB..64 MiB) across hosts\n" << r.output;
  if (probe)
    for (const auto& f : fit_alpha_beta(probe->bandwidth, probe->world_size)) {
      if (f.link != "inter_host") continue;
      if (f.op == "all_gather") m.fitted_gather_busbw = f.busbw_bytes_per_s / 1e9;
      if (f.op != "all_reduce") continue;
      m.fitted_busbw = f.busbw_bytes_per_s / 1e9;
      m.all_reduce_alpha_s = f.alpha_s;
    }
  test::write_json(dir / (name + ".json"), test::tiny_config());
  m.predict_output =
      hybrid::test::run_command(fmt::format("{} predict --config {} --world 16 --hosts 2 --db {}",
                                            test::tune_bin(), dir / (name + ".json"), db))
          .output;
  return m;
}

TEST(ProbeAcrossHosts, MeasuresTheShapedInterHostBandwidth) {
  test::TempDir dir;
  Measured shaped, unshaped;
  {
    hybrid::test::TestCluster cluster(2, "--rate 1gbit --delay 1ms");
    HYBRID_REQUIRE_CLUSTER(cluster);
    shaped = measure_inter_host(cluster, dir, "shaped");
  }
  {
    hybrid::test::TestCluster cluster(2);
    HYBRID_REQUIRE_CLUSTER(cluster);
    unshaped = measure_inter_host(cluster, dir, "unshaped");
  }
  std::printf(
      "inter-host, shaped (1 Gbit/s, 1 ms) vs unshaped: best busbw %.3f vs %.3f GB/s, fitted "
      "busbw all-reduce %.3f vs %.3f, all-gather %.3f vs %.3f GB/s, fastest small message %.2f vs "
      "%.2f ms, all-reduce alpha %.2f vs %.2f ms per step\n",
      shaped.best_busbw, unshaped.best_busbw, shaped.fitted_busbw, unshaped.fitted_busbw,
      shaped.fitted_gather_busbw, unshaped.fitted_gather_busbw, shaped.fastest_small_s * 1e3,
      unshaped.fastest_small_s * 1e3, shaped.all_reduce_alpha_s * 1e3,
      unshaped.all_reduce_alpha_s * 1e3);
  // What the shaping enforces, whatever the load: no transfer beats the token
  // bucket's rate (burst aside: 20 %) and no message crosses faster than the
  // delay line. Load only slows transfers, so how close the probe comes to
  // the rate and the delay (within 20 % on a quiet machine, docs/cluster.md)
  // is a measurement, printed above, not a verdict (issue 26).
  EXPECT_LE(shaped.best_busbw, 1.2 * kShapedGBps);
  EXPECT_GE(shaped.fastest_small_s, kDelayS);
  EXPECT_GT(shaped.fitted_busbw, 0.0);
  EXPECT_GT(shaped.all_reduce_alpha_s, 0.0);
  // Unshaped links are neither capped nor delayed: the probe sees past both
  // by far more than load takes away (about 8x and 20x here).
  EXPECT_GT(unshaped.best_busbw, 1.2 * kShapedGBps) << "shaped: " << shaped.best_busbw << " GB/s";
  EXPECT_LT(unshaped.fastest_small_s, kDelayS);
  // The store has a probe across hosts (and no trials yet): predict says so.
  EXPECT_NE(shaped.predict_output.find("predicting 16 ranks on 2 host(s) (8 per host)"),
            std::string::npos)
      << shaped.predict_output;
  EXPECT_EQ(shaped.predict_output.find("the probe measured no link between hosts"),
            std::string::npos)
      << shaped.predict_output;
}

}  // namespace
}  // namespace hybrid::autotune
