// A run store with generation rows, written through RunStore as hybrid-generate
// and hybrid-train's rollout loop write them: a training run without any, a
// generate run, a bench run (pp and tg rows) and a rollout run of three steps
// with their breakdown. The figures are chosen so tests can check them.
#pragma once

#include <filesystem>

#include "profiler/store/run_store.h"

namespace hybrid::gui::test {

struct GenerationDb {
  int64_t training_run = 0, generate_run = 0, bench_run = 0, rollout_run = 0;
  double largest_tpot_p99_ms = 0;
};

inline profiler::GenerationRow generation_row(profiler::GenerationKind kind, double tpot_p50) {
  profiler::GenerationRow r;
  r.kind = kind;
  r.model = "gpt2 124.44 M";
  r.dtype = "fp32";
  r.batch = 4;
  r.prompts = 4;
  r.prompt_tokens = 40;
  r.new_tokens = 256;
  r.ttft_ms = profiler::LatencyPercentiles{30, 45, 50};
  r.tpot_ms = profiler::LatencyPercentiles{tpot_p50, tpot_p50 * 1.5, tpot_p50 * 2};
  r.tokens_per_s = 4000 / tpot_p50;
  return r;
}

inline GenerationDb write_generation_db(const std::filesystem::path& path) {
  using profiler::GenerationKind;
  profiler::RunStore store(path);
  GenerationDb db;
  profiler::RunInfo info;
  info.name = "training";
  db.training_run = store.create_run(info);
  info.name = "hybrid-generate";
  db.generate_run = store.create_run(info);
  store.add_generation(db.generate_run, generation_row(GenerationKind::generate, 20));
  info.name = "hybrid-generate --bench";
  db.bench_run = store.create_run(info);
  auto pp = generation_row(GenerationKind::bench, 10);
  pp.test = "pp512";
  pp.tpot_ms.reset();
  pp.tokens_per_s_sd = 2.5;
  store.add_generation(db.bench_run, pp);
  auto tg = generation_row(GenerationKind::bench, 10);
  tg.test = "tg128";
  tg.tokens_per_s_sd = 1.5;
  store.add_generation(db.bench_run, tg);
  info.name = "rollout";
  db.rollout_run = store.create_run(info);
  for (int step = 0; step < 3; ++step) {
    auto r = generation_row(GenerationKind::rollout, 30 + 5 * step);
    r.step = step;
    r.e2e_ms = 900;
    r.gather_ms = 50;
    r.generate_ms = 600;
    r.train_ms = 240;
    r.other_ms = 10;
    r.samples_per_s = 4.4;
    store.add_generation(db.rollout_run, r);
  }
  db.largest_tpot_p99_ms = 80;  // the last rollout step's: (30 + 10) * 2
  for (int64_t id : {db.training_run, db.generate_run, db.bench_run, db.rollout_run})
    store.finish_run(id, profiler::RunStatus::ok);
  return db;
}

}  // namespace hybrid::gui::test
