#include "engine/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "engine/data/atomic_file.h"
#include "engine/data/data_loader.h"
#include "engine/data/llmc_checkpoint.h"
#include "engine/data/data_sources.h"
#include "engine/engine.h"
#include "engine/memory_model.h"
#include "engine/run_recorder.h"
#include "engine/util/units.h"
#include "profiler/flops.h"

namespace hybrid {

using namespace engine;

nlohmann::json TrainSummary::to_json() const {
  nlohmann::json mem_current = nlohmann::json::object(), mem_peak = nlohmann::json::object();
  for (int c = 0; c < kMemCategoryCount; ++c) {
    const std::string name(mem_category_name(MemCategory(c)));
    mem_current[name] = memory.current[size_t(c)];
    mem_peak[name] = memory.peak[size_t(c)];
  }
  nlohmann::json j = {
      {"status", status},
      {"steps", steps},
      {"global_step", global_step},
      {"final_loss", final_loss},
      {"losses", losses},
      {"ms_per_step_median", ms_per_step_median},
      {"tokens_per_s", tokens_per_s},
      {"samples_per_s", samples_per_s},
      {"flops_per_step", flops_per_step},
      {"achieved_flops_per_s", achieved_flops_per_s},
      {"skipped_steps", skipped_steps},
      {"exposed_comm_ms_per_step", exposed_comm_ms_per_step},
      {"peak_memory_bytes", mem_peak},
      {"peak_memory_total_bytes", memory.total_peak},
      {"world_size", world_size},
  };
  if (predicted_peak_bytes) {
    j["predicted_peak_bytes"] = *predicted_peak_bytes;
    nlohmann::json pm = nlohmann::json::object();
    for (int c = 0; c < kMemCategoryCount; ++c) pm[std::string(mem_category_name(MemCategory(c)))] = predicted_memory[size_t(c)];
    j["predicted_memory_bytes"] = pm;
  }
  if (host_memory.total_peak > 0) {  // the offloaded optimizer's host memory
    nlohmann::json hp = nlohmann::json::object(), hm = nlohmann::json::object();
    for (int c = 0; c < kMemCategoryCount; ++c) {
      hp[std::string(mem_category_name(MemCategory(c)))] = host_memory.peak[size_t(c)];
      hm[std::string(mem_category_name(MemCategory(c)))] = predicted_host_memory[size_t(c)];
    }
    j["peak_host_memory_bytes"] = hp;
    j["peak_host_memory_total_bytes"] = host_memory.total_peak;
    j["predicted_host_memory_bytes"] = hm;
  }
  nlohmann::json comm = nlohmann::json::object();
  for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
    comm[std::string(profiler::collective_name(profiler::CollectiveKind(k)))] = comm_bytes_per_step[size_t(k)];
  j["comm_bytes_per_step"] = comm;
  if (!std::isnan(unigram_entropy)) j["data"] = {{"unigram_entropy", unigram_entropy}, {"entropy_rate", entropy_rate}};
  if (run_id) j["run_id"] = run_id;
  if (status != "ok") j["error"] = {{"kind", error_kind}, {"message", error}};
  return j;
}

double model_flops_per_step(const Config& cfg, int64_t n_params, int world_size) {
  const double tokens = double(cfg.train_micro_batch_size_per_gpu) * cfg.gradient_accumulation_steps *
                        world_size * cfg.model.seq_len;
  return profiler::flops::gpt2_step_closed_form(double(n_params), cfg.model.n_layer, cfg.model.n_embd,
                                                cfg.model.seq_len, tokens, /*causal=*/true);
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}


// The training loop proper; failures propagate to run_training.
void train(const Config& cfg, const TrainOptions& opts, TrainSummary& out, RunRecorder& recorder) {
  EngineOptions engine_opts;
  engine_opts.quiet = opts.quiet;
  auto engine = initialize(cfg, make_gpt2(cfg), std::move(engine_opts));
  out.world_size = engine->world_size();
  out.rank = engine->rank();
  const bool rank0 = engine->rank() == 0;
  auto say = [&](const std::string& s) {
    if (rank0 && !opts.quiet) std::printf("%s\n", s.c_str()), std::fflush(stdout);
  };
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.model.seq_len;
  const int gas = cfg.gradient_accumulation_steps;
  say(fmt::format("hybrid: GPT-2 {} parameters (L={} C={} H={} V={}), {} | {} rank(s), ZeRO stage {}, {} | "
                  "batch {} = {} micro × {} accumulation × {} ranks, seq {}",
                  format_count(double(engine->param_count())), cfg.model.n_layer, cfg.model.n_embd,
                  cfg.model.n_head, cfg.model.vocab_size, engine->backend().name(), engine->world_size(),
                  cfg.zero.stage, kernels::dtype_name(cfg.param_dtype()), cfg.train_batch_size, B, gas,
                  engine->world_size(), T));
  for (const auto& key : cfg.ignored_keys) say("config: ignoring unsupported key " + key);

  if (!cfg.init_from.empty()) {
    const Gpt2Weights w = read_llmc_checkpoint(cfg.init_from);
    std::vector<float> flat;
    gpt2_from_llmc(engine->model(), engine->module_tree(), w, flat);
    engine->set_parameters(flat);
    say("initialised from " + cfg.init_from);
  }
  if (!opts.load_dir.empty()) engine->load_checkpoint(opts.load_dir, opts.load_tag);

  auto data = open_data_sources(cfg);
  if (data.synthetic) {
    out.unigram_entropy = data.unigram_entropy;
    out.entropy_rate = data.entropy_rate;
  }
  DataLoader loader(std::move(data.train), BatchShape{B, T, gas, engine->world_size(), engine->rank()});
  std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
  out.flops_per_step = model_flops_per_step(cfg, engine->param_count(), engine->world_size());
  const double tokens_per_step = double(B) * gas * engine->world_size() * T;

  const int64_t steps = opts.steps > 0 ? opts.steps : 20;
  const int64_t first = engine->global_step();
  recorder.attach(*engine, steps);
  const auto comm_before = engine->comm_counters();
  auto& tracer = engine->tracer();
  const uint32_t step_name = tracer.intern("step"), data_name = tracer.intern("data");
  std::vector<double> step_ms;
  double exposed_total_ms = 0.0;
  for (int64_t s = first; s < first + steps; ++s) {
    tracer.set_enabled(recorder.profiled(s + 1));
    tracer.set_step(int32_t(s + 1));
    const auto t0 = std::chrono::steady_clock::now();
    double loss = 0.0;
    {
      profiler::Scope step_scope(&tracer, step_name, profiler::Category::step);
      for (int k = 0; k < gas; ++k) {
        {
          profiler::Scope data_scope(&tracer, data_name, profiler::Category::data);
          loader.fill(s, k, inputs.data(), targets.data());
        }
        loss += engine->forward(inputs, targets);
        engine->backward();
        engine->step();
      }
    }
    // On a GPU the step ends when its last kernel does, not when the host has
    // queued it: wait for the device before reading the clock (the next step's
    // first loss read would wait for it anyway).
    engine->backend().synchronize();
    tracer.set_enabled(false);
    loss = engine->mean_over_ranks(loss / gas);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    step_ms.push_back(ms);
    exposed_total_ms += double(engine->comm_tracer().step_totals(int32_t(s + 1)).exposed_ns) / 1e6;
    out.losses.push_back(loss);
    recorder.on_step(s + 1, loss, ms, out.flops_per_step);
    const auto& st = engine->last_step();
    const int64_t done = s - first + 1;
    if (done == 1 || done == steps || (cfg.steps_per_print > 0 && (s + 1) % cfg.steps_per_print == 0))
      say(fmt::format("step {:>5} | loss {:.4f} | lr {:.3e} | scale {:g}{} | {:.1f} ms | {:.0f} tok/s | {}",
                      s + 1, loss, st.lr, st.loss_scale, st.skipped ? " (skipped)" : "", ms,
                      tokens_per_step / (ms / 1e3), format_flops(out.flops_per_step / (ms / 1e3))));
    if (!opts.save_dir.empty() && opts.save_every > 0 && (s + 1) % opts.save_every == 0)
      engine->save_checkpoint(opts.save_dir, fmt::format("step{:06d}", s + 1));
    if (opts.kill_after_step > 0 && s + 1 == opts.kill_after_step) {
      std::fflush(stdout);
      ::kill(::getpid(), SIGKILL);
    }
  }
  out.memory = engine->allocator().stats();  // training's peaks, before any export
  out.host_memory = engine->host_allocator().stats();
  const auto comm_after = engine->comm_counters();
  for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
    out.comm_bytes_per_step[size_t(k)] = double(comm_after.bytes[k] - comm_before.bytes[k]) / double(steps);
  if (!opts.save_dir.empty() && (opts.save_every <= 0 || engine->global_step() % opts.save_every != 0))
    engine->save_checkpoint(opts.save_dir, fmt::format("step{:06d}", engine->global_step()));

  if (!opts.export_path.empty()) {
    const auto flat = engine->gather_parameters();  // collective
    if (rank0) {
      Gpt2Weights w;
      gpt2_to_llmc(engine->model(), engine->module_tree(), flat, w);
      write_llmc_checkpoint(opts.export_path, w);
      say("exported fp32 weights to " + opts.export_path);
    }
  }

  out.steps = steps;
  out.global_step = engine->global_step();
  out.final_loss = out.losses.back();
  out.ms_per_step_median = median(step_ms);
  out.tokens_per_s = tokens_per_step / (out.ms_per_step_median / 1e3);
  out.samples_per_s = tokens_per_step / T / (out.ms_per_step_median / 1e3);
  out.achieved_flops_per_s = out.flops_per_step / (out.ms_per_step_median / 1e3);
  out.skipped_steps = engine->skipped_steps();
  out.exposed_comm_ms_per_step = exposed_total_ms / double(steps);
  const auto predicted = predict_memory(cfg, engine->world_size(), engine->backend());
  out.predicted_peak_bytes = predicted.total();
  out.predicted_memory = predicted.bytes;
  out.predicted_host_memory = predicted.host;


  say(fmt::format("done: {} steps, median {:.1f} ms/step, {:.0f} tokens/s, {}, final loss {:.4f}, "
                  "{} skipped", steps, out.ms_per_step_median, out.tokens_per_s,
                  format_flops(out.achieved_flops_per_s), out.final_loss, out.skipped_steps));
  std::string mem = "peak memory per rank:";
  for (int c = 0; c < kMemCategoryCount; ++c)
    if (out.memory.peak[size_t(c)])
      mem += fmt::format(" {} {}", mem_category_name(MemCategory(c)), format_bytes(out.memory.peak[size_t(c)]));
  say(mem + fmt::format(" | total {}", format_bytes(out.memory.total_peak)));
  if (out.host_memory.total_peak > 0) {
    std::string host = "peak host memory per rank (offloaded optimizer):";
    for (int c = 0; c < kMemCategoryCount; ++c)
      if (out.host_memory.peak[size_t(c)])
        host += fmt::format(" {} {}", mem_category_name(MemCategory(c)), format_bytes(out.host_memory.peak[size_t(c)]));
    say(host + fmt::format(" | total {}", format_bytes(out.host_memory.total_peak)));
  }
  recorder.finish(out);
  out.run_id = recorder.run_id();
  if (out.run_id && !opts.db.empty()) say(fmt::format("recorded as run {} in {}", out.run_id, opts.db));
}

// This process's rank as the launcher announced it (valid before MPI starts).
int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

}  // namespace

void write_train_result(const std::string& path, const TrainSummary& s) {
  if (path.empty()) return;
  const std::string text = s.to_json().dump(2) + "\n";
  AtomicFileWriter w(path);
  w.write(text.data(), text.size());
  w.commit();
}

TrainSummary run_training(const Config& cfg, const TrainOptions& opts) {
  TrainSummary s;
  s.rank = launcher_rank();
  std::unique_ptr<RunRecorder> recorder;
  try {
    recorder = std::make_unique<RunRecorder>(cfg, opts, s.rank);
    train(cfg, opts, s, *recorder);
  } catch (const OutOfMemoryError& e) {
    s.status = "oom", s.error_kind = "OutOfMemoryError", s.error = e.what();
  } catch (const ConfigError& e) {
    s.status = "config_error", s.error_kind = "ConfigError", s.error = e.what();
  } catch (const std::exception& e) {
    s.status = "failed", s.error_kind = "Error", s.error = e.what();
  }
  if (s.status != "ok" && recorder) {
    s.run_id = recorder->run_id();
    recorder->fail(s);
  }
  if (s.rank == 0) write_train_result(opts.result_path, s);
  return s;
}

}  // namespace hybrid
