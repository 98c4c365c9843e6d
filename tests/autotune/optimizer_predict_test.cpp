// `hybrid-tune predict` over the optimizer axis: for a larger cluster spread
// over hosts, the candidates of a space with opt = [AdamW, OneBitAdam] are
// ranked by the cost model on the probe's inter-host link, 1-bit first when
// that link is slow and last when it is fast (no trials: the prior weights).
#include <gtest/gtest.h>

#include "autotune/predict.h"
#include "base/host.h"
#include "profiler/comm_tracer.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::CollectiveKind;

// A probe of 2 ranks whose collectives take alpha + bytes / bandwidth, between
// hosts at `inter_bytes_per_s`, within a host at 10 GB/s; GEMMs at 1 TFLOP/s
// (the step's compute small beside the links).
profiler::ProbeResult probe(double inter_bytes_per_s) {
  profiler::ProbeResult p;
  p.host = base::host_name();
  p.device = "cpu";
  p.world_size = 2;
  p.gemm_flops_per_s = 1e12;
  for (const auto& [op, kind] : {std::pair{"all_reduce", CollectiveKind::all_reduce},
                                 std::pair{"all_gather", CollectiveKind::all_gather},
                                 std::pair{"reduce_scatter", CollectiveKind::reduce_scatter},
                                 std::pair{"all_to_all", CollectiveKind::all_to_all}})
    for (const auto& [link, rate] :
         {std::pair{"intra_host", 1e10}, std::pair{"inter_host", inter_bytes_per_s}})
      for (uint64_t b = 1024; b <= (uint64_t(1) << 30); b *= 16) {
        const double algbw = double(b) / (50e-6 + double(b) / rate) / 1e9;
        p.bandwidth.push_back({op, b, algbw, algbw * profiler::bus_factor(kind, 2), link, 2});
      }
  return p;
}

std::vector<std::string> ranking(double inter_bytes_per_s) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config({{"hybrid",
                                                         {{"model",
                                                           {{"n_layer", 2},
                                                            {"n_embd", 256},
                                                            {"n_head", 4},
                                                            {"vocab_size", 8192},
                                                            {"seq_len", 64}}}}}}));
  test::write_json(dir / "space.json", json::parse(R"({"opt": ["AdamW", "OneBitAdam"]})"));
  {
    profiler::RunStore store(dir / "tune.db", profiler::OpenMode::read_write);
    store.add_probe(probe(inter_bytes_per_s));
  }
  PredictOptions o;
  o.config = dir / "cfg.json";
  o.space = dir / "space.json";
  o.db = dir / "tune.db";
  o.world = 16;
  o.hosts = 4;
  const Prediction p = predict(o);
  std::vector<std::string> keys;
  for (const auto& c : p.ranked) {
    keys.push_back(c.key);
    std::printf("%.3g B/s between hosts: %s %.2f ms\n", inter_bytes_per_s, c.key.c_str(),
                1e3 * c.step_s);
  }
  return keys;
}

TEST(OptimizerPredict, OneBitRanksFirstForASlowInterHostLinkAndLastForAFastOne) {
  EXPECT_EQ(ranking(1.25e8),  // 1 Gbit/s
            (std::vector<std::string>{"mbs=1,gas=1,stage=0,opt=OneBitAdam",
                                      "mbs=1,gas=1,stage=0,opt=AdamW"}));
  EXPECT_EQ(ranking(1e11), (std::vector<std::string>{"mbs=1,gas=1,stage=0,opt=AdamW",
                                                     "mbs=1,gas=1,stage=0,opt=OneBitAdam"}));
}

}  // namespace
}  // namespace hybrid::autotune
