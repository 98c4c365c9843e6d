// Run-store databases for the viewer tests, written through RunStore's writer API
// the way a profiled training run and a sweep write them: a GPT-2 module tree,
// several ranks with their own clocks, profiled steps whose events nest like the
// engine's scopes (forward/backward per module, comm waits, collectives on the comm
// lane, the optimizer, the step), layer stats summed from those events, comm
// stats, step rows, memory, and a sweep with ok, OOM and timed-out trials and
// pruned candidates.
//
// The generator keeps its own books while it lays out the events (FixtureExpect),
// so tests compare the view-models' figures with numbers derived independently.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "profiler/profile_data.h"
#include "profiler/store/run_store.h"

namespace hybrid::gui::test {

using profiler::Category;
using profiler::Event;

struct FixtureModule {
  std::string name;
  std::string type;
  int32_t parent = -1;
  int depth = 0;
  uint64_t params = 0;
  uint64_t activation_bytes = 0;
  double fwd_ms = 0;       // leaf compute time per micro-step (before the run's factors)
  uint64_t fwd_flops = 0;  // inclusive of children
  std::vector<int32_t> children;
};

// GPT-2 as engine/model/gpt2.cpp builds it: model → embedding, h.N (ln_1, attn
// (c_attn, core, c_proj), ln_2, mlp (c_fc, gelu, c_proj)), ln_f, lm_head, loss;
// ids in preorder like the engine's module table.
inline std::vector<FixtureModule> gpt2_fixture_modules(int n_layer, int C, int V, int B, int T) {
  std::vector<FixtureModule> m;
  const double tokens = double(B) * T;
  const double rate = 40e9;  // FLOP/s the leaf times are derived from
  auto add = [&](std::string name, std::string type, int32_t parent, uint64_t params,
                 uint64_t flops, uint64_t act, double extra_ms = 0) {
    FixtureModule f;
    f.name = std::move(name);
    f.type = std::move(type);
    f.parent = parent;
    f.depth = parent < 0 ? 0 : m[size_t(parent)].depth + 1;
    f.params = params;
    f.activation_bytes = act;
    f.fwd_flops = flops;
    f.fwd_ms = double(flops) / rate * 1e3 + extra_ms;
    const int32_t id = int32_t(m.size());
    if (parent >= 0) m[size_t(parent)].children.push_back(id);
    m.push_back(std::move(f));
    return id;
  };
  auto linear_flops = [&](int in, int out) { return uint64_t(2 * tokens * in * out); };
  const uint64_t act = uint64_t(tokens) * uint64_t(C) * 2;
  const int32_t root = add("", "GPT2", -1, 0, 0, 0);
  add("embedding", "Embedding", root, uint64_t(V + T) * C, uint64_t(tokens * C), act, 0.05);
  for (int l = 0; l < n_layer; ++l) {
    const std::string h = fmt::format("h.{}", l);
    const int32_t block = add(h, "Block", root, 0, 0, 0);
    add(h + ".ln_1", "LayerNorm", block, 2 * uint64_t(C), uint64_t(8 * tokens * C), act, 0.02);
    const int32_t attn = add(h + ".attn", "CausalSelfAttention", block, 0, 0, 0);
    add(h + ".attn.c_attn", "Linear", attn, uint64_t(C) * 3 * C + 3 * C, linear_flops(C, 3 * C),
        3 * act);
    add(h + ".attn.core", "AttentionCore", attn, 0, uint64_t(4 * tokens * T * C), 2 * act, 0.1);
    add(h + ".attn.c_proj", "Linear", attn, uint64_t(C) * C + C, linear_flops(C, C), act);
    add(h + ".ln_2", "LayerNorm", block, 2 * uint64_t(C), uint64_t(8 * tokens * C), act, 0.02);
    const int32_t mlp = add(h + ".mlp", "MLP", block, 0, 0, 0);
    add(h + ".mlp.c_fc", "Linear", mlp, uint64_t(C) * 4 * C + 4 * C, linear_flops(C, 4 * C),
        4 * act);
    add(h + ".mlp.gelu", "Gelu", mlp, 0, uint64_t(8 * tokens * 4 * C), 4 * act, 0.03);
    add(h + ".mlp.c_proj", "Linear", mlp, uint64_t(4 * C) * C + C, linear_flops(4 * C, C), act);
  }
  add("ln_f", "LayerNorm", root, 2 * uint64_t(C), uint64_t(8 * tokens * C), act, 0.02);
  add("lm_head", "Linear", root, 0, linear_flops(C, V), uint64_t(tokens) * uint64_t(V) * 2);
  add("loss", "CrossEntropyLoss", root, 0, uint64_t(5 * tokens * V), uint64_t(tokens) * 8, 0.05);
  // A container's scope counts its children's FLOPs (LayerStat values are inclusive);
  // children come after their parent in preorder.
  for (size_t i = m.size(); i-- > 0;)
    if (m[i].parent >= 0) m[size_t(m[i].parent)].fwd_flops += m[i].fwd_flops;
  return m;
}

struct FixtureRunSpec {
  std::string name = "gpt2-tiny";
  int world_size = 2;
  int zero_stage = 2;
  int micro_batch = 4;
  int grad_accum = 2;
  int n_layer = 2;
  int n_embd = 128;
  int vocab = 2048;
  int seq_len = 64;
  int steps = 10;
  std::vector<int64_t> profiled_steps = {5, 9};
  double speed = 1.0;                      // every duration is divided by it
  double rank_skew = 0.1;                  // rank r is (1 + r·skew) slower
  int64_t rank_epoch_skew_ns = 7'000'000;  // rank r's tracer epoch is r·skew later
  double wait_in_block_ms = 0.6;           // exposed: a bucket wait inside h.0's backward
  double wait_outside_ms = 0.3;            // exposed: the final flush, outside any module
  double wait_in_optimizer_ms = 0.4;
  double wait_blocked_ms = 0;  // a wait outside modules with no collective in flight
  double optimizer_ms = 1.5;   // optimizer compute (plus its wait)
  double data_ms = 0.4;        // batch loading inside the step: "other"
  double step_tail_ms = 0.2;   // after the optimizer: "other"
  bool gpu_lane = false;       // also one kernel per leaf forward on GPU stream 0
  int repeat_leaves = 1;       // each leaf forward is this many events (for big event counts)
  profiler::RunStatus status = profiler::RunStatus::ok;
};

// What the generator booked for one rank in one profiled step (ms).
struct RankExpect {
  std::map<int32_t, double> fwd_ms, bwd_ms;  // inclusive, summed over micro-steps
  std::map<int32_t, double> exposed_ms;      // waits inside the module, inclusive
  double optimizer_ms = 0;                   // incl. the wait inside it
  double optimizer_exposed_ms = 0;
  double outside_ms = 0;
  double blocked_ms = 0;              // waits with no collective in flight
  double step_ms = 0;                 // the step event
  double comm_ms = 0;                 // union of collectives
  int64_t step_start_aligned_ns = 0;  // start of the step event on the shared clock
};

struct FixtureRun {
  int64_t run_id = 0;
  FixtureRunSpec spec;
  std::vector<FixtureModule> modules;
  // [profiled step][rank]
  std::map<int64_t, std::vector<RankExpect>> expect;
  std::vector<profiler::StepRow> steps;
  int64_t events = 0;
};

class FixtureWriter {
 public:
  explicit FixtureWriter(profiler::RunStore& store) : store_(store) {}

  FixtureRun write_run(const FixtureRunSpec& spec) {
    FixtureRun out;
    out.spec = spec;
    out.modules =
        gpt2_fixture_modules(spec.n_layer, spec.n_embd, spec.vocab, spec.micro_batch, spec.seq_len);
    profiler::RunInfo info;
    info.name = spec.name;
    info.config_json = config_json(spec);
    info.host = "fixture-host";
    info.device = "AMD EPYC 7R13 (2 cores)";
    info.backend = "cpu";
    info.world_size = spec.world_size;
    info.dtype = "bf16";
    info.zero_stage = spec.zero_stage;
    info.micro_batch = spec.micro_batch;
    info.grad_accum = spec.grad_accum;
    info.seq_len = spec.seq_len;
    for (const auto& m : out.modules) info.n_params += m.params;
    info.git_revision = "fixture";
    info.hybrid_version = "0.1.0";
    out.run_id = store_.create_run(info);

    std::vector<profiler::ModuleInfo> mods;
    for (size_t i = 0; i < out.modules.size(); ++i) {
      const auto& m = out.modules[i];
      mods.push_back({int32_t(i), m.parent, m.name, m.type, m.depth, m.params, m.activation_bytes});
    }
    store_.add_modules(out.run_id, mods);

    const int64_t base_epoch = 1'700'000'000'000'000'000;
    for (int r = 0; r < spec.world_size; ++r) {
      store_.register_rank(out.run_id, r, base_epoch + r * spec.rank_epoch_skew_ns);
    }

    // Steps: the profiled ones take their step event's time on rank 0.
    std::map<int64_t, double> profiled_ms;
    for (int64_t s : spec.profiled_steps) {
      std::vector<RankExpect> ranks;
      for (int r = 0; r < spec.world_size; ++r) {
        const int64_t step_start_wall = 50'000'000 + (s - 1) * 400'000'000;  // shared clock
        ranks.push_back(write_profiled_step(out, spec, s, r, step_start_wall));
      }
      profiled_ms[s] = ranks[0].step_ms;
      out.expect[s] = std::move(ranks);
    }
    double scale = 65536;
    for (int s = 1; s <= spec.steps; ++s) {
      profiler::StepRow row;
      row.step = s;
      const bool skipped = s == 3;  // an fp16 overflow
      row.skipped = skipped;
      if (skipped) scale /= 2;
      row.loss = skipped ? std::nan("") : 7.6 * std::exp(-0.05 * s) + 0.01 * (s % 3);
      row.lr = 3e-4 * std::min(1.0, s / 4.0);
      row.loss_scale = scale;
      row.grad_norm = skipped ? std::nan("") : 1.0 / s;
      row.step_ms = profiled_ms.count(s) ? profiled_ms[s] : (30.0 + (s % 4)) / spec.speed;
      const double tokens =
          double(spec.micro_batch) * spec.grad_accum * spec.seq_len * spec.world_size;
      row.tokens_per_s = skipped ? 0 : tokens / (row.step_ms * 1e-3);
      row.flops_per_s = skipped ? 0 : 6.0 * double(info.n_params) * row.tokens_per_s;
      out.steps.push_back(row);
    }
    store_.add_steps(out.run_id, out.steps);

    std::vector<profiler::MemoryRow> mem;
    const uint64_t params = info.n_params;
    for (int r = 0; r < spec.world_size; ++r) {
      const uint64_t shard = spec.zero_stage >= 1 ? uint64_t(spec.world_size) : 1;
      mem.push_back({r, "params", params * 2, params * 2, params * 2});
      mem.push_back({r, "grads", params * 2 / (spec.zero_stage >= 2 ? shard : 1),
                     params * 2 / (spec.zero_stage >= 2 ? shard : 1) + 4096u * r,
                     params * 2 / (spec.zero_stage >= 2 ? shard : 1)});
      mem.push_back(
          {r, "optimizer", params * 12 / shard, params * 12 / shard, params * 12 / shard});
      uint64_t act = 0;
      for (const auto& m : out.modules) act += m.activation_bytes;
      mem.push_back({r, "activations", 0, act + uint64_t(r) * 65536, act});
      mem.push_back({r, "comm", 1u << 20, 1u << 21, std::nullopt});
    }
    store_.add_memory(out.run_id, mem);
    store_.finish_run(out.run_id, spec.status,
                      spec.status == profiler::RunStatus::ok ? "" : "failed", "{}");
    return out;
  }

 private:
  static std::string config_json(const FixtureRunSpec& s) {
    return fmt::format(
        R"({{"train_micro_batch_size_per_gpu": {}, "gradient_accumulation_steps": {}, )"
        R"("bf16": {{"enabled": true}}, "zero_optimization": {{"stage": {}, )"
        R"("reduce_bucket_size": 500000000, "overlap_comm": true}}, )"
        R"("hybrid": {{"model": {{"type": "gpt2", "n_layer": {}, "n_embd": {}, "vocab_size": {}, "seq_len": {}}}}}}})",
        s.micro_batch, s.grad_accum, s.zero_stage, s.n_layer, s.n_embd, s.vocab, s.seq_len);
  }

  uint32_t name_id(const std::string& name) {
    auto it = name_ids_.find(name);
    if (it != name_ids_.end()) return it->second;
    const uint32_t id = uint32_t(names_.size());
    names_.push_back(name);
    name_ids_[name] = id;
    return id;
  }

  // One rank's events of one profiled step, laid out on a cursor in the rank's
  // own clock; layer stats are summed from those events.
  RankExpect write_profiled_step(FixtureRun& run, const FixtureRunSpec& spec, int64_t step,
                                 int rank, int64_t step_start_wall) {
    names_.clear();
    name_ids_.clear();
    const auto& mods = run.modules;
    const double k = (1.0 + rank * spec.rank_skew) / spec.speed;
    const int64_t epoch_offset = rank * spec.rank_epoch_skew_ns;
    int64_t t = step_start_wall - epoch_offset;  // the rank's clock
    std::vector<Event> evs;
    RankExpect ex;
    ex.step_start_aligned_ns = step_start_wall;
    auto ns = [&](double ms) { return int64_t(std::llround(ms * 1e6 * k)); };
    auto event = [&](int64_t start, int64_t dur, const std::string& name, Category c,
                     int32_t module, uint16_t lane, uint64_t flops = 0, uint64_t bytes = 0) {
      Event e;
      e.start_ns = start;
      e.dur_ns = dur;
      e.name_id = name_id(name);
      e.category = c;
      e.module_id = module;
      e.lane = lane;
      e.rank = uint16_t(rank);
      e.step = int32_t(step);
      e.flops = flops;
      e.bytes = bytes;
      evs.push_back(e);
    };
    std::map<int32_t, std::pair<int64_t, int64_t>> fwd_ns, bwd_ns;  // module → (ns, calls)
    std::map<int32_t, uint64_t> fwd_flops, bwd_flops;
    std::map<int32_t, double> waits;                // exclusive
    std::vector<std::pair<int64_t, int64_t>> comm;  // collective intervals
    const int32_t last_block = 2 + (spec.n_layer - 1) * 11;
    const std::string model_name = "model";
    auto name_of = [&](int32_t id) {
      return mods[size_t(id)].name.empty() ? model_name : mods[size_t(id)].name;
    };

    const int64_t step_begin = t;
    event(t, ns(spec.data_ms), "data", Category::data, -1, profiler::kLaneCompute);
    t += ns(spec.data_ms);
    for (int micro = 0; micro < spec.grad_accum; ++micro) {
      const bool last_micro = micro == spec.grad_accum - 1;
      auto forward = [&](auto&& self, int32_t id) -> void {
        const int64_t start = t;
        const FixtureModule& m = mods[size_t(id)];
        if (m.children.empty()) {
          const int64_t dur = ns(m.fwd_ms);
          const int pieces = std::max(1, spec.repeat_leaves);
          for (int p = 0; p < pieces; ++p) {
            const int64_t a = start + dur * p / pieces, b = start + dur * (p + 1) / pieces;
            if (pieces > 1)
              event(a, b - a, name_of(id) + ".op", Category::other, id, profiler::kLaneCompute);
            if (spec.gpu_lane)
              event(a + (b - a) / 4, (b - a) / 2, m.type + "_kernel", Category::kernel, id,
                    uint16_t(profiler::kLaneGpuBase));
          }
          t += dur;
        } else {
          t += ns(0.005);
          for (int32_t c : m.children) self(self, c);
          t += ns(0.005);
        }
        event(start, t - start, name_of(id), Category::forward, id, profiler::kLaneCompute,
              m.fwd_flops);
        fwd_ns[id].first += t - start;
        fwd_ns[id].second += 1;
        fwd_flops[id] += m.fwd_flops;
      };
      auto backward = [&](auto&& self, int32_t id) -> void {
        const int64_t start = t;
        const FixtureModule& m = mods[size_t(id)];
        if (m.children.empty()) {
          t += ns(2 * m.fwd_ms);
        } else {
          t += ns(0.005);
          for (auto it = m.children.rbegin(); it != m.children.rend(); ++it) self(self, *it);
          if (id == 2 && (last_micro || spec.zero_stage >= 2)) {
            // h.0 closes the last bucket: the reduce of the buckets started in the
            // last block's backward is still running, the thread waits for it.
            const int64_t w = ns(spec.wait_in_block_ms);
            event(t, w, "comm_wait", Category::comm, -1, profiler::kLaneCompute);
            waits[id] += double(w) * 1e-6;
            t += w;
          }
          if (id == last_block && (last_micro || spec.zero_stage >= 2)) {
            comm.push_back({t, -1});  // all_reduce issued here, ends at h.0's wait end
          }
          t += ns(0.005);
        }
        event(start, t - start, name_of(id), Category::backward, id, profiler::kLaneCompute,
              2 * m.fwd_flops);
        bwd_ns[id].first += t - start;
        bwd_flops[id] += 2 * m.fwd_flops;
        if (id == 2 && !comm.empty() && comm.back().second < 0) comm.back().second = t - ns(0.005);
      };
      forward(forward, 0);
      backward(backward, 0);
      if (last_micro) {
        // The final flush: a collective queued behind the last bucket's (one FIFO comm thread).
        const int64_t w = ns(spec.wait_outside_ms);
        event(t, w, "comm_wait", Category::comm, -1, profiler::kLaneCompute);
        comm.push_back(
            {std::max(t - ns(1.0), comm.empty() ? INT64_MIN : comm.back().second), t + w});
        ex.outside_ms += double(w) * 1e-6;
        t += w;
        if (spec.wait_blocked_ms > 0) {
          // Waiting on a handle whose collective has not started on this rank.
          const int64_t b = ns(spec.wait_blocked_ms);
          event(t, b, "comm_wait", Category::comm, -1, profiler::kLaneCompute);
          ex.blocked_ms += double(b) * 1e-6;
          t += b;
        }
      }
    }
    // The optimizer: compute, then the parameter all-gather it waits for.
    const int64_t opt_start = t;
    t += ns(spec.optimizer_ms);
    const int64_t w = ns(spec.wait_in_optimizer_ms);
    comm.push_back({t - ns(0.2), t + w});
    event(t, w, "comm_wait", Category::comm, -1, profiler::kLaneCompute);
    t += w;
    event(opt_start, t - opt_start, "optimizer", Category::optimizer, -1, profiler::kLaneCompute);
    ex.optimizer_ms = double(t - opt_start) * 1e-6;
    ex.optimizer_exposed_ms = double(w) * 1e-6;
    t += ns(spec.step_tail_ms);
    event(step_begin, t - step_begin, "step", Category::step, -1, profiler::kLaneCompute);
    ex.step_ms = double(t - step_begin) * 1e-6;

    // Collectives on the comm lane; bytes of a bf16 gradient bucket / parameter shard.
    const uint64_t bucket_bytes = 2 * 1024 * 1024;
    std::map<std::pair<std::string, uint64_t>, std::vector<int64_t>> per_op;
    for (size_t i = 0; i < comm.size(); ++i) {
      const auto [a, b] = comm[i];
      const bool gather = i + 1 == comm.size();
      const std::string op =
          gather ? "all_gather" : (spec.zero_stage >= 2 ? "reduce_scatter" : "all_reduce");
      const uint64_t bytes = gather ? bucket_bytes / 2 : bucket_bytes;
      event(a, b - a, op, Category::comm, -1, profiler::kLaneComm, 0, bytes);
      per_op[{op, bytes}].push_back(b - a);
    }
    int64_t covered = 0, cover_end = INT64_MIN;
    auto sorted = comm;
    std::sort(sorted.begin(), sorted.end());
    for (auto [a, b] : sorted) {
      if (b <= cover_end) continue;
      covered += b - std::max(a, cover_end);
      cover_end = b;
    }
    ex.comm_ms = double(covered) * 1e-6;
    store_.add_events(run.run_id, evs, names_);
    run.events += int64_t(evs.size());

    // Layer stats from the events' books; waits add up the tree.
    std::vector<profiler::LayerStat> stats;
    for (size_t id = 0; id < mods.size(); ++id) {
      profiler::LayerStat l;
      l.rank = rank;
      l.module_id = int32_t(id);
      l.step = step;
      l.fwd_ns = fwd_ns[int32_t(id)].first;
      l.bwd_ns = bwd_ns[int32_t(id)].first;
      l.fwd_flops = fwd_flops[int32_t(id)];
      l.bwd_flops = bwd_flops[int32_t(id)];
      l.calls = fwd_ns[int32_t(id)].second;
      stats.push_back(l);
      ex.fwd_ms[int32_t(id)] = double(l.fwd_ns) * 1e-6;
      ex.bwd_ms[int32_t(id)] = double(l.bwd_ns) * 1e-6;
    }
    for (size_t id = 0; id < mods.size(); ++id) {
      const double w_ms = waits[int32_t(id)];
      for (int32_t a = int32_t(id); a >= 0; a = mods[size_t(a)].parent) ex.exposed_ms[a] += w_ms;
    }
    store_.add_layer_stats(run.run_id, stats);

    std::vector<profiler::CommStatRow> cs;
    for (const auto& [key, durs] : per_op) {
      profiler::CommStatRow c;
      c.rank = rank;
      c.op = key.first;
      c.bytes = key.second;
      c.count = int64_t(durs.size());
      c.min_ns = *std::min_element(durs.begin(), durs.end());
      c.max_ns = *std::max_element(durs.begin(), durs.end());
      for (int64_t d : durs) c.total_ns += d;
      c.algbw_gbps = double(c.bytes) / (double(c.total_ns) / double(c.count));
      const double n = spec.world_size;
      c.busbw_gbps = c.algbw_gbps * (c.op == "all_reduce" ? 2 * (n - 1) / n : (n - 1) / n);
      cs.push_back(c);
    }
    store_.add_comm_stats(run.run_id, cs);

    double exposed = ex.outside_ms + ex.optimizer_exposed_ms;
    for (const auto& [id, w_ms] : waits) exposed += w_ms;
    double modules_ms = ex.fwd_ms[0] + ex.bwd_ms[0];
    std::vector<profiler::StepRankRow> sr{
        {step, rank, modules_ms + ex.optimizer_ms, ex.comm_ms, exposed}};
    store_.add_step_ranks(run.run_id, sr);
    return ex;
  }

  profiler::RunStore& store_;
  std::vector<std::string> names_;
  std::map<std::string, uint32_t> name_ids_;
};

// A sweep over micro batch × ZeRO stage whose ok trials point at runs written
// with FixtureWriter; one OOM, one timeout, and two candidates pruned by the
// memory model.
struct FixtureSweep {
  int64_t sweep_id = 0;
  std::vector<FixtureRun> runs;  // the ok trials' runs, in trial order
  std::vector<profiler::TrialRow> trials;
};

inline std::string trial_config(int mb, int stage, int gas = 2) {
  return fmt::format(
      R"({{"train_micro_batch_size_per_gpu": {}, "gradient_accumulation_steps": {}, "bf16": {{"enabled": true}}, )"
      R"("zero_optimization": {{"stage": {}, "reduce_bucket_size": 500000000, "allgather_bucket_size": 200000000, "overlap_comm": true}}}})",
      mb, gas, stage);
}

inline FixtureSweep write_fixture_sweep(profiler::RunStore& store) {
  FixtureSweep out;
  profiler::SweepInfo sweep;
  sweep.name = "gpt2-tiny on 2 ranks";
  sweep.strategy = "grid";
  sweep.metric = "tokens_per_s";
  sweep.space_json = R"({"micro_batch": [2, 4, 8, 16], "zero_stage": [1, 2]})";
  out.sweep_id = store.create_sweep(sweep);
  FixtureWriter writer(store);
  struct Point {
    int mb, stage;
    double speed;
    profiler::TrialStatus status;
  };
  const std::vector<Point> points = {
      {2, 1, 0.8, profiler::TrialStatus::ok}, {4, 1, 1.0, profiler::TrialStatus::ok},
      {4, 2, 1.2, profiler::TrialStatus::ok}, {8, 2, 1.1, profiler::TrialStatus::ok},
      {8, 1, 0, profiler::TrialStatus::oom},  {16, 2, 0, profiler::TrialStatus::timeout}};
  for (const Point& p : points) {
    profiler::TrialRow t;
    t.sweep_id = out.sweep_id;
    t.key = fmt::format("mb={},gas=2,zero={},bucket=5e8,overlap=1", p.mb, p.stage);
    t.config_json = trial_config(p.mb, p.stage);
    t.status = p.status;
    t.predicted_mem_bytes = uint64_t(p.mb) * (300u << 20) / uint64_t(p.stage);
    t.predicted_step_ms = 20.0 * p.mb / 4;
    if (p.status == profiler::TrialStatus::ok) {
      FixtureRunSpec spec;
      spec.name = fmt::format("trial mb={} zero={}", p.mb, p.stage);
      spec.micro_batch = p.mb;
      spec.zero_stage = p.stage;
      spec.speed = p.speed;
      spec.profiled_steps = {9};
      FixtureRun run = writer.write_run(spec);
      double tok = 0;
      std::vector<double> ms;
      for (const auto& s : run.steps)
        if (!s.skipped) ms.push_back(s.step_ms);
      std::sort(ms.begin(), ms.end());
      t.latency_ms = ms[ms.size() / 2];
      tok = double(p.mb) * 2 * spec.seq_len * spec.world_size / (*t.latency_ms * 1e-3);
      t.metric = tok;
      t.tokens_per_s = tok;
      t.peak_mem_bytes = *t.predicted_mem_bytes * 11 / 10;
      t.run_id = run.run_id;
      t.reason = fmt::format("{:.0f} tokens/s", tok);
      out.runs.push_back(std::move(run));
    } else if (p.status == profiler::TrialStatus::oom) {
      t.reason = "out of memory: activations 3.1 GiB over the 2.0 GiB budget";
    } else {
      t.reason = "timeout after 120 s";
    }
    t.id = store.upsert_trial(t);
    out.trials.push_back(t);
  }
  std::vector<profiler::PrunedCandidate> pruned = {
      {"mb=16,gas=2,zero=1,bucket=5e8,overlap=1", trial_config(16, 1), 5ull << 30, 2ull << 30,
       "predicted 5.0 GiB > budget 2.0 GiB"},
      {"mb=32,gas=2,zero=2,bucket=5e8,overlap=1", trial_config(32, 2), 9ull << 30, 2ull << 30,
       "predicted 9.0 GiB > budget 2.0 GiB"}};
  store.add_pruned(out.sweep_id, pruned);
  store.set_sweep_status(out.sweep_id, profiler::SweepStatus::done);
  return out;
}

}  // namespace hybrid::gui::test
