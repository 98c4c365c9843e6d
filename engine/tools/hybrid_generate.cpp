// hybrid-generate: generates tokens from a model with a key/value cache.
//   hybrid-generate --model PATH (--prompt-tokens 1,2,3 ... | --prompt TEXT ... | --prompts
//   FILE.jsonl)
//                   [--tokenizer FILE|DIR]
//                   [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P]
//                   [--seed S] [--stop-tokens 50256,...] [--batch N] [--dtype fp32|bf16|fp16]
//                   [--cache-dtype fp32|bf16|fp16] [--json OUT] [--db FILE [--name NAME]]
//   hybrid-generate --model PATH --bench [--bench-pp 512,...] [--bench-tg 128,...]
//                   [--repetitions R] [--batch N] [--dtype ...] [--json OUT] [--db FILE]
// PATH: an llm.c checkpoint file, a Hugging Face directory (GPT2LMHeadModel,
// LlamaForCausalLM) or a hybrid checkpoint (its directory or a tag's folder). A prompts file has
// one {"tokens": [...]} or {"text": "..."} object a line. Text needs a tokenizer: --tokenizer, or
// the model folder's tokenizer.json / tokenizer.model; with one, the output has the new text too.
// --bench measures like llama-bench (pp N: prefill, tg N: decode; tokens/s,
// mean ± sd over the repetitions); --db records the run and its generation rows
// in the run store (hybrid-prof report generate, hybrid-view).
// Exit status: 0 ok, 2 a bad argument or input (named, nothing written), 1 any
// other failure.
#include "engine/tools/hybrid_generate.h"

#include <fmt/format.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/cli_checks.h"
#include "base/output_path.h"
#include "base/units.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/checkpoint_model.h"
#include "engine/data/data_file_error.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "engine/engine.h"
#include "engine/generate/prompts.h"
#include "engine/rollout.h"

using namespace hybrid;
using namespace hybrid::engine;
using namespace hybrid::generate_tool;

namespace hybrid::generate_tool {

std::unique_ptr<Engine> load_engine(const Options& o, const StoredModel& stored) {
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 1}, {"steps_per_print", 1000000}};
  if (o.dtype == "bf16") j["bf16"] = {{"enabled", true}};
  if (o.dtype == "fp16") j["fp16"] = {{"enabled", true}};
  Config cfg = parse_config(j);
  cfg.model = stored.model;
  cfg.model.padded_vocab_size = stored.padded_vocab;
  EngineOptions eo;
  eo.quiet = true;
  auto e = initialize(cfg, make_model(cfg), std::move(eo));
  if (stored.format == kCheckpointFormat)  // whatever layout saved it, put back whole
    e->set_parameters(
        read_checkpoint_weights(*checkpoint_model_in(o.model), e->module_tree().param_count()));
  else
    e->set_parameters(e->model().read_weights(o.model, e->module_tree()));
  return e;
}

}  // namespace hybrid::generate_tool

namespace {

// A bad argument or input (exit 2, the run config_error), not a failure.
bool is_bad_input(const std::exception& e) {
  return dynamic_cast<const std::invalid_argument*>(&e) || dynamic_cast<const DataFileError*>(&e) ||
         dynamic_cast<const ConfigError*>(&e) || dynamic_cast<const CheckpointError*>(&e);
}

// The model file's description: what every check before loading needs.
StoredModel stored_model(const Options& o) {
  auto stored = stored_model_in(o.model);
  if (!stored)
    if (const auto ckpt = checkpoint_model_in(o.model))
      stored = StoredModel{ckpt->model, ckpt->model.padded_vocab_size, kCheckpointFormat};
  if (!stored)
    throw DataFileError(fmt::format(
        "{}: neither an llm.c checkpoint, a Hugging Face directory nor a hybrid checkpoint",
        o.model));
  stored->model.padded_vocab_size = stored->padded_vocab;
  return *stored;
}

// --tokenizer's, else the model folder's when it holds one, else none.
std::unique_ptr<Tokenizer> prompt_tokenizer(const Options& o) {
  if (!o.tokenizer.empty()) return open_tokenizer(o.tokenizer);
  if (folder_holds_tokenizer(o.model)) return open_tokenizer(o.model);
  if (!o.prompt_texts.empty())
    throw std::invalid_argument(
        "--prompt needs a tokenizer: give --tokenizer, or a model folder holding tokenizer.json "
        "or tokenizer.model");
  return nullptr;
}

// Every prompt of the command line, checked against the model before anything
// loads or is written: a bad prompt costs nothing.
std::vector<std::vector<int>> checked_prompts(const Options& o, GenerationParams& gen,
                                              const ModelConfig& model,
                                              const Tokenizer* tokenizer) {
  std::vector<std::vector<int>> prompts;
  for (const auto& p : o.prompt_tokens) prompts.push_back(parse_token_list(p));
  for (const auto& text : o.prompt_texts) prompts.push_back(encode_prompt(*tokenizer, text));
  if (!o.prompts_file.empty())
    for (auto& p : read_prompts_file(o.prompts_file, tokenizer)) prompts.push_back(std::move(p));
  if (!o.stop_tokens.empty()) gen.stop_tokens = parse_token_list(o.stop_tokens);
  if (!o.cache_dtype.empty()) gen.cache_dtype = kernels::parse_dtype(o.cache_dtype);
  if (std::string e = generation_error(prompts, gen, model); !e.empty())
    throw std::invalid_argument(e);
  return prompts;
}

// What one generate run measured, over its batches.
struct Generated {
  nlohmann::json sequences = nlohmann::json::array();
  std::vector<double> ttft, tpot;
  double total_ms = 0;
  int64_t new_tokens = 0;
};

Generated generate_batches(Engine& e, const std::vector<std::vector<int>>& prompts,
                           const GenerationParams& gen, size_t batch, const Tokenizer* tokenizer) {
  Generated g;
  for (size_t first = 0; first < prompts.size(); first += batch) {
    const std::vector<std::vector<int>> part(
        prompts.begin() + long(first),
        prompts.begin() + long(std::min(first + batch, prompts.size())));
    const GenerationResult r = e.generate(part, gen);
    for (size_t i = 0; i < part.size(); ++i) {
      nlohmann::json seq = {{"prompt_tokens", part[i]}, {"tokens", r.tokens[i]}};
      std::printf("%zu: %s\n", first + i, fmt::format("{}", fmt::join(r.tokens[i], ",")).c_str());
      if (tokenizer) {
        seq["text"] = tokenizer->decode(r.tokens[i]);
        std::printf("%zu: %s\n", first + i, seq["text"].get<std::string>().c_str());
      }
      g.sequences.push_back(std::move(seq));
    }
    g.ttft.insert(g.ttft.end(), r.ttft_ms.begin(), r.ttft_ms.end());
    g.tpot.insert(g.tpot.end(), r.tpot_ms.begin(), r.tpot_ms.end());
    g.total_ms += r.total_ms;
    g.new_tokens += r.new_tokens();
  }
  return g;
}

profiler::GenerationRow generate_row(const Generated& g, const std::string& model,
                                     const std::string& dtype, size_t batch,
                                     const std::vector<std::vector<int>>& prompts) {
  profiler::GenerationRow row;
  row.kind = profiler::GenerationKind::generate;
  row.model = model;
  row.dtype = dtype;
  row.batch = int(batch);
  row.prompts = int(prompts.size());
  for (const auto& p : prompts) row.prompt_tokens += int64_t(p.size());
  row.new_tokens = g.new_tokens;
  row.ttft_ms = profiler::latency_percentiles(g.ttft);
  row.tpot_ms = profiler::latency_percentiles(g.tpot);
  row.tokens_per_s = g.total_ms > 0 ? double(g.new_tokens) / (g.total_ms / 1e3) : 0.0;
  return row;
}

// The generation itself; the run is already recorded as running.
nlohmann::json generate(Engine& e, const Options& o, const std::vector<std::vector<int>>& prompts,
                        const GenerationParams& gen, const Tokenizer* tokenizer,
                        RunRecord& record) {
  const size_t batch = o.batch > 0 ? size_t(o.batch) : prompts.size();
  const Generated g = generate_batches(e, prompts, gen, batch, tokenizer);
  const auto row = generate_row(g, generation_model_label(e.config().model, e.param_count()),
                                o.dtype, batch, prompts);
  std::printf("%lld new tokens in %.1f ms: %.1f tokens/s (%s)\n",
              static_cast<long long>(g.new_tokens), g.total_ms, row.tokens_per_s,
              e.backend().name().c_str());
  record.add(row);
  return {{"sequences", g.sequences},
          {"ttft_ms", latency_samples_json(g.ttft)},
          {"tpot_ms", latency_samples_json(g.tpot)},
          {"tokens_per_s", row.tokens_per_s},
          {"new_tokens", g.new_tokens},
          {"dtype", o.dtype},
          {"model", o.model}};
}

nlohmann::json bench(Engine& e, const Options& o, const std::vector<BenchTest>& tests,
                     RunRecord& record) {
  const std::string model = generation_model_label(e.config().model, e.param_count());
  const auto results = run_bench(e, o, tests, model);
  const int threads = omp_get_max_threads();
  std::printf("%s", bench_table(results, e.backend().name(), threads).c_str());
  for (const auto& r : results) record.add(r.row);
  return {{"bench", bench_json(results)},
          {"model", o.model},
          {"label", model},
          {"dtype", o.dtype},
          {"threads", threads},
          {"backend", e.backend().name()}};
}

int run(const Options& o) {
  const StoredModel stored = stored_model(o);
  GenerationParams gen = o.gen;
  std::vector<std::vector<int>> prompts;
  std::vector<BenchTest> tests;
  std::unique_ptr<Tokenizer> tokenizer;
  if (o.bench) {
    tests = bench_tests(o, stored.model.seq_len);
  } else {
    tokenizer = prompt_tokenizer(o);
    prompts = checked_prompts(o, gen, stored.model, tokenizer.get());
  }
  if (!o.json_out.empty())
    if (std::string why = base::why_not_writable_file(o.json_out); !why.empty())
      throw std::invalid_argument(fmt::format("--json {}: {}", o.json_out, why));
  const int batch = o.batch > 0 ? o.batch : o.bench ? 1 : int(prompts.size());
  RunRecord record(o, stored, batch);
  try {
    auto engine = load_engine(o, stored);
    record.describe(*engine);
    nlohmann::json out = o.bench ? bench(*engine, o, tests, record)
                                 : generate(*engine, o, prompts, gen, tokenizer.get(), record);
    if (!o.db.empty()) {
      nlohmann::json summary = out;
      summary.erase("sequences");
      record.finish(summary);
      out["run_id"] = record.run_id();
      std::printf("recorded as run %lld in %s\n", static_cast<long long>(record.run_id()),
                  o.db.c_str());
    }
    if (!o.json_out.empty()) base::write_file_atomic(o.json_out, out.dump(2) + "\n");
    return 0;
  } catch (const std::exception& e) {
    record.fail(is_bad_input(e), e.what());
    throw;
  }
}

void add_generation_options(CLI::App& app, Options& o) {
  app.add_option("--max-new-tokens", o.gen.max_new_tokens, "tokens to generate per prompt (16)")
      ->check(base::at_least(1));
  app.add_option("--temperature", o.gen.sampling.temperature, "0 is greedy (default)")
      ->check(base::at_least(0));
  app.add_option("--top-k", o.gen.sampling.top_k, "keep the k most likely tokens (0: all)")
      ->check(base::at_least(0));
  app.add_option("--top-p", o.gen.sampling.top_p, "nucleus sampling, in (0, 1] (1: all)")
      ->check(base::greater_than(0));
  app.add_option("--seed", o.gen.sampling.seed, "the sampling seed (0); --bench: the prompts' too");
  app.add_option("--stop-tokens", o.stop_tokens, "token ids that end a sequence: 50256,...");
  app.add_option("--batch", o.batch, "prompts generated together (default: all; --bench: 1)")
      ->check(base::at_least(1));
  app.add_option("--dtype", o.dtype, "the weights' and activations' type")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--cache-dtype", o.cache_dtype, "the key/value cache's type (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
}

void add_bench_and_store_options(CLI::App& app, Options& o) {
  app.add_flag("--bench", o.bench, "measure prefill (pp N) and decode (tg N) like llama-bench");
  app.add_option("--bench-pp", o.bench_pp,
                 "prompt sizes to prefill: 512 (fit to the block), 0: none")
      ->delimiter(',');
  app.add_option("--bench-tg", o.bench_tg, "tokens to decode: 128 (fit to the block), 0: none")
      ->delimiter(',');
  app.add_option("--repetitions", o.repetitions, "--bench: measured runs of each test (5)")
      ->check(base::at_least(1));
  app.add_option("--json", o.json_out, "write the sequences (or the bench figures) here");
  app.add_option("--db", o.db, "run store (SQLite) to record the run in, e.g. results/hybrid.db");
  app.add_option("--name", o.run_name, "name of the run in the store");
}

// The status for an error `run` threw: 2 for bad input, 1 otherwise.
int status_of(const std::exception& e) {
  std::fprintf(stderr, "hybrid-generate: %s\n", e.what());
  return is_bad_input(e) ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybrid-generate: generation with a key/value cache (GPT-2, Llama)"};
  Options o;
  app.add_option("--model", o.model, "an llm.c checkpoint file or a Hugging Face directory")
      ->required();
  app.add_option("--prompt-tokens", o.prompt_tokens, "a prompt as token ids: 1,2,3 (repeatable)");
  app.add_option("--prompt", o.prompt_texts, "a prompt as text (repeatable; needs a tokenizer)");
  app.add_option("--prompts", o.prompts_file,
                 "a JSON-lines file: {\"tokens\": [...]} or {\"text\": \"...\"} a line")
      ->check(CLI::ExistingFile);
  app.add_option("--tokenizer", o.tokenizer,
                 "tokenizer.json, a SentencePiece .model, or a folder holding one (default: the "
                 "model folder's, if any)");
  add_generation_options(app, o);
  add_bench_and_store_options(app, o);
  if (auto status = base::parse_command_line(app, argc, argv, 2)) return *status;
  const bool prompted =
      !o.prompt_tokens.empty() || !o.prompt_texts.empty() || !o.prompts_file.empty();
  if (!o.bench && !prompted) {
    std::fprintf(stderr, "hybrid-generate: give prompts: --prompt-tokens, --prompt or --prompts\n");
    return 2;
  }
  if (o.bench && prompted) {
    std::fprintf(stderr,
                 "hybrid-generate: --bench makes its own prompts: drop --prompt-tokens, --prompt "
                 "and --prompts\n");
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    return status_of(e);
  }
}
