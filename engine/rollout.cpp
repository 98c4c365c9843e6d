#include "engine/rollout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/units.h"
#include "engine/data/data_file_error.h"
#include "engine/engine.h"
#include "engine/generate/prompts.h"

namespace hybrid {

using engine::ConfigError;

namespace {

double seconds(double ms) { return ms / 1e3; }
double percent(double part, double whole) { return whole > 0 ? part / whole * 100.0 : 0.0; }

engine::GenerationParams params_of(const engine::RolloutConfig& c) {
  engine::GenerationParams p;
  p.max_new_tokens = c.max_new_tokens;
  p.sampling = c.sampling;
  p.cache_dtype = c.cache_dtype;
  return p;
}

// hybrid.rollout.batch: a rank's prompts in calls of `batch` rows (every rank
// makes as many calls, their shares being equal), each prompt keeping its
// sampler index; the calls' tokens, latencies and times, as one.
engine::GenerationResult generate_in_calls(Engine& e, const std::vector<std::vector<int>>& prompts,
                                           engine::GenerationParams p, int batch) {
  const size_t rows = batch > 0 ? size_t(batch) : prompts.size();
  engine::GenerationResult all;
  for (size_t first = 0; first < prompts.size(); first += rows) {
    const size_t last = std::min(first + rows, prompts.size());
    const std::vector<std::vector<int>> part(prompts.begin() + long(first),
                                             prompts.begin() + long(last));
    p.sequence_ids.resize(part.size());
    for (size_t i = 0; i < part.size(); ++i) p.sequence_ids[i] = int(first + i);
    engine::GenerationResult r = e.generate(part, p);
    all.tokens.insert(all.tokens.end(), r.tokens.begin(), r.tokens.end());
    all.ttft_ms.insert(all.ttft_ms.end(), r.ttft_ms.begin(), r.ttft_ms.end());
    all.tpot_ms.insert(all.tpot_ms.end(), r.tpot_ms.begin(), r.tpot_ms.end());
    all.total_ms += r.total_ms;
    all.gather_ms += r.gather_ms;
  }
  return all;
}

// The prompts file's prompts i with i mod ranks == rank; every rank as many,
// since data-parallel ranks generate together (ZeRO-3 gathers collectively).
std::vector<std::vector<int>> share_of(const std::vector<std::vector<int>>& all, int rank,
                                       int ranks, const std::string& path) {
  if (all.size() % size_t(ranks) != 0)
    throw ConfigError(
        fmt::format("config: hybrid.rollout.prompts {}: {} prompts do not share out evenly over {} "
                    "data-parallel ranks (give a multiple of {})",
                    path, all.size(), ranks, ranks));
  std::vector<std::vector<int>> mine;
  for (size_t i = size_t(rank); i < all.size(); i += size_t(ranks)) mine.push_back(all[i]);
  return mine;
}

}  // namespace

std::string RolloutBreakdown::line() const {
  return fmt::format(
      "|E2E latency={:.2f}s |Gather latency={:.2f}s ({:.2f}%) |Generate time={:.2f}s ({:.2f}%) "
      "|Training time={:.2f}s ({:.2f}%) |Others={:.2f} ({:.2f}%)|CurSamplesPerSec={:.2f} "
      "|AvgSamplesPerSec={:.2f}",
      seconds(e2e_ms), seconds(gather_ms), percent(gather_ms, e2e_ms), seconds(generate_ms),
      percent(generate_ms, e2e_ms), seconds(train_ms), percent(train_ms, e2e_ms), seconds(other_ms),
      percent(other_ms, e2e_ms), samples_per_s, avg_samples_per_s);
}

nlohmann::json RolloutBreakdown::to_json() const {
  return {{"step", step},
          {"samples", samples},
          {"new_tokens", new_tokens},
          {"e2e_ms", e2e_ms},
          {"gather_ms", gather_ms},
          {"generate_ms", generate_ms},
          {"train_ms", train_ms},
          {"other_ms", other_ms},
          {"samples_per_s", samples_per_s},
          {"avg_samples_per_s", avg_samples_per_s},
          {"batch", batch},
          {"tokens_per_s", tokens_per_s()},
          {"ttft_ms", latency_samples_json(ttft_ms)},
          {"tpot_ms", latency_samples_json(tpot_ms)},
          {"tokens", tokens},
          {"texts", texts}};
}

double RolloutBreakdown::tokens_per_s() const {
  const double generating_s = seconds(gather_ms + generate_ms);
  return generating_s > 0 ? double(new_tokens) / generating_s : 0.0;
}

nlohmann::json latency_samples_json(const std::vector<double>& ms) {
  const auto p = profiler::latency_percentiles(ms);
  if (!p) return nullptr;
  return {{"p50", p->p50}, {"p90", p->p90}, {"p99", p->p99}, {"samples", ms}};
}

std::string generation_model_label(const engine::ModelConfig& m, int64_t params) {
  return fmt::format("{} {}", m.type, base::format_count(double(params)));
}

std::vector<std::string> RolloutBreakdown::lines() const {
  return {
      fmt::format("rollout after step {}: {} new tokens for {} prompts", step, new_tokens, samples),
      line()};
}

profiler::GenerationRow Rollouts::row(const RolloutBreakdown& b) const {
  profiler::GenerationRow r;
  r.kind = profiler::GenerationKind::rollout;
  r.model = model_label_;
  r.dtype = dtype_;
  r.batch = std::max(b.batch, 1);
  r.prompts = int(b.samples);
  r.prompt_tokens = b.prompt_tokens;
  r.new_tokens = b.new_tokens;
  r.ttft_ms = profiler::latency_percentiles(b.ttft_ms);
  r.tpot_ms = profiler::latency_percentiles(b.tpot_ms);
  r.tokens_per_s = b.tokens_per_s();
  r.e2e_ms = b.e2e_ms, r.gather_ms = b.gather_ms, r.generate_ms = b.generate_ms;
  r.train_ms = b.train_ms, r.other_ms = b.other_ms;
  r.samples_per_s = b.samples_per_s;
  r.step = b.step;
  return r;
}

Rollouts::Rollouts(const engine::Config& cfg, Engine& e) : cfg_(cfg.rollout), engine_(e) {
  if (!enabled()) return;
  if (cfg.parallel.pipeline_stages > 1)
    throw ConfigError(
        "config: hybrid.rollout: generation under pipeline parallelism is not supported yet");
  std::vector<std::vector<int>> all;
  try {
    if (!cfg_.tokenizer.empty())
      tokenizer_ = engine::open_tokenizer(cfg_.tokenizer);
    else if (!cfg.init_from.empty() && engine::folder_holds_tokenizer(cfg.init_from))
      tokenizer_ = engine::open_tokenizer(cfg.init_from);
  } catch (const engine::DataFileError& err) {
    throw ConfigError(fmt::format("config: hybrid.rollout.tokenizer: {}", err.what()));
  }
  try {
    all = engine::read_prompts_file(cfg_.prompts, tokenizer_.get());
  } catch (const engine::DataFileError& err) {
    throw ConfigError(fmt::format("config: hybrid.rollout.prompts: {}", err.what()));
  }
  // Every prompt is checked on every rank, so that all refuse alike.
  if (std::string why = e.generation_refusal(all, params_of(cfg_)); !why.empty())
    throw ConfigError(fmt::format("config: hybrid.rollout.prompts {}: {}", cfg_.prompts, why));
  prompts_ = share_of(all, e.data_parallel_rank(), e.data_parallel_size(), cfg_.prompts);
  for (const auto& p : all) prompt_tokens_ += int64_t(p.size());
  model_label_ = generation_model_label(cfg.model, e.param_count());
  dtype_ = std::string(kernels::dtype_name(cfg.param_dtype()));
}

void Rollouts::start() {
  iteration_start_ = Clock::now();
  train_ms_ = 0;
}

RolloutBreakdown Rollouts::run(int64_t step) {
  const engine::GenerationResult g =
      generate_in_calls(engine_, prompts_, params_of(cfg_), cfg_.batch);
  RolloutBreakdown b;
  b.step = step;
  // Tensor-parallel peers generate the same rows: count each data-parallel rank once.
  const double ranks = double(engine_.data_parallel_size());
  b.samples = int64_t(prompts_.size()) * int64_t(ranks);
  b.new_tokens = std::llround(engine_.mean_over_ranks(double(g.new_tokens())) * ranks);
  b.e2e_ms = std::chrono::duration<double, std::milli>(Clock::now() - iteration_start_).count();
  b.gather_ms = g.gather_ms;
  b.generate_ms = g.total_ms - g.gather_ms;
  b.train_ms = train_ms_;
  b.other_ms = b.e2e_ms - b.gather_ms - b.generate_ms - b.train_ms;
  ++iterations_;
  total_e2e_ms_ += b.e2e_ms;
  b.samples_per_s = double(b.samples) / seconds(b.e2e_ms);
  b.avg_samples_per_s = double(b.samples) * double(iterations_) / seconds(total_e2e_ms_);
  b.batch = cfg_.batch > 0 ? std::min(cfg_.batch, int(prompts_.size())) : int(prompts_.size());
  b.prompt_tokens = prompt_tokens_;
  if (engine_.rank() == 0) {
    b.tokens = g.tokens, b.ttft_ms = g.ttft_ms, b.tpot_ms = g.tpot_ms;
    if (tokenizer_)
      for (const auto& t : b.tokens) b.texts.push_back(tokenizer_->decode(t));
  }
  start();
  return b;
}

}  // namespace hybrid
