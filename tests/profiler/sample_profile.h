// A small, hand-checkable profile of a 2-layer GPT on 2 ranks, shared by the report
// and hybrid-prof tests. The numbers are chosen so that the expected figures can be
// worked out by hand (see the comments); rank 1 is 1.25× slower than rank 0.
#pragma once

#include <limits>

#include "profiler/profile_data.h"

namespace hybrid::profiler::test {

// Total params 623,872: wte 524,288 + 2 × (16,640 + 33,088) + ln_f 128.
inline std::vector<ModuleInfo> sample_modules() {
  return {{0, -1, "model", "GPT2", 0, 0, 0},
          {1, 0, "wte", "Embedding", 1, 524288, 0},
          {2, 0, "h.0", "Block", 1, 0, 0},
          {3, 2, "h.0.attn", "Attention", 2, 16640, 0},
          {4, 2, "h.0.mlp", "MLP", 2, 33088, 0},
          {5, 0, "h.1", "Block", 1, 0, 0},
          {6, 5, "h.1.attn", "Attention", 2, 16640, 0},
          {7, 5, "h.1.mlp", "MLP", 2, 33088, 0},
          {8, 0, "ln_f", "LayerNorm", 1, 128, 0}};
}

// Leaf modules only (containers are the sums of their children). Step 3, rank 0:
// fwd wte 1 ms, attn 4 ms, mlp 6 ms, ln_f 0.5 ms → model fwd 21.5 ms; bwd twice that.
// FLOPs per rank: fwd 2·(4e9 + 8e9) + 1e6 = 24.001e9, bwd 48.002e9.
inline std::vector<LayerStat> sample_layers() {
  std::vector<LayerStat> out;
  for (int rank : {0, 1}) {
    const double k = rank == 0 ? 1.0 : 1.25;
    auto ns = [&](double ms) { return int64_t(ms * 1e6 * k); };
    auto add = [&](int32_t id, double fwd_ms, uint64_t fwd_flops, uint64_t fwd_macs) {
      out.push_back({rank, id, 3, ns(fwd_ms), ns(2 * fwd_ms), fwd_flops, 2 * fwd_flops, fwd_macs,
                     2 * fwd_macs, 2});
    };
    add(1, 1.0, 0, 0);
    for (int32_t attn : {3, 6}) add(attn, 4.0, 4'000'000'000, 2'000'000'000);
    for (int32_t mlp : {4, 7}) add(mlp, 6.0, 8'000'000'000, 4'000'000'000);
    add(8, 0.5, 1'000'000, 0);
  }
  out.push_back({0, 1, 2, 7'000'000, 9'000'000, 0, 0, 0, 0, 2});  // an earlier profiled step
  return out;
}

inline RunProfile sample_profile() {
  RunProfile p;
  p.run.id = 1;
  p.run.name = "tiny";
  p.run.world_size = 2;
  p.run.micro_batch = 4;
  p.run.grad_accum = 2;
  p.run.seq_len = 128;
  p.run.dtype = "bf16";
  p.run.zero_stage = 2;
  p.run.status = RunStatus::ok;
  p.modules = sample_modules();
  p.layers = sample_layers();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  p.steps = {{1, 10.1234, 1e-4, 65536, false, 2.5, 100.0, 8192, 1.2e12},
             {2, nan, 2e-4, 32768, true, nan, 80.0, 0, 0},
             {3, 9.5, 3e-4, 32768, false, 1.5, 95.5, 8500, 1.5e12}};
  // Step 3: comm 20 and 22 ms, exposed 5 and 7 ms → mean 21 / 6 ms, hidden 1 − 12/42.
  p.step_ranks = {{3, 0, 80, 20, 5}, {3, 1, 85, 22, 7}};
  // all_reduce 1 MiB: 10 calls per rank, 5 + 7 ms in total → mean 0.600 ms.
  p.comm = {{0, "all_reduce", 1 << 20, 10, 5'000'000, 400'000, 700'000, 2.0, 3.0},
            {1, "all_reduce", 1 << 20, 10, 7'000'000, 500'000, 900'000, 1.5, 2.5}};
  // rank 0: params 1.5 GiB as predicted; activations peak 2 GiB against 1.6 GiB predicted.
  p.memory = {{0, "activations", 0, 2147483648ull, 1717986918ull},
              {0, "params", 1610612736ull, 1610612736ull, 1610612736ull},
              {1, "grads", 1024, 4096, std::nullopt}};
  return p;
}

}  // namespace hybrid::profiler::test
