// hybrid-generate: generates tokens from a model with a key/value cache.
//   hybrid-generate --model PATH (--prompt-tokens 1,2,3 ... | --prompts FILE.jsonl)
//                   [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P]
//                   [--seed S] [--stop-tokens 50256,...] [--batch N] [--dtype fp32|bf16|fp16]
//                   [--cache-dtype fp32|bf16|fp16] [--json OUT]
// PATH: an llm.c checkpoint file or a Hugging Face directory (GPT2LMHeadModel,
// LlamaForCausalLM). A prompts file has one {"tokens": [...]} object a line.
// Exit status: 0 ok, 2 a bad argument or input (named, nothing written), 1 any
// other failure.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/cli_checks.h"
#include "base/dispersion.h"
#include "base/output_path.h"
#include "engine/data/data_file_error.h"
#include "engine/engine.h"
#include "engine/generate/prompts.h"
#include "engine/model/registry.h"

using namespace hybrid;
using namespace hybrid::engine;

namespace {

struct Options {
  std::string model, prompts_file, json_out, dtype = "fp32";
  std::string cache_dtype;  // "": the weights' dtype
  std::vector<std::string> prompt_tokens;
  std::string stop_tokens;
  int batch = 0;  // 0: every prompt in one batch
  GenerationParams gen;
};

// An engine holding the model in `path` at the asked dtype, its weights read.
std::unique_ptr<Engine> load(const Options& o) {
  const auto stored = stored_model_in(o.model);
  if (!stored)
    throw DataFileError(
        fmt::format("{}: neither an llm.c checkpoint nor a Hugging Face directory", o.model));
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 1}, {"steps_per_print", 1000000}};
  if (o.dtype == "bf16") j["bf16"] = {{"enabled", true}};
  if (o.dtype == "fp16") j["fp16"] = {{"enabled", true}};
  Config cfg = parse_config(j);
  cfg.model = stored->model;
  cfg.model.padded_vocab_size = stored->padded_vocab;
  EngineOptions eo;
  eo.quiet = true;
  auto e = initialize(cfg, make_model(cfg), std::move(eo));
  e->set_parameters(e->model().read_weights(o.model, e->module_tree()));
  return e;
}

nlohmann::json percentiles(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return {{"p50", base::quantile(v, 0.5)},
          {"p90", base::quantile(v, 0.9)},
          {"p99", base::quantile(v, 0.99)}};
}

int run(const Options& o) {
  std::vector<std::vector<int>> prompts;
  for (const auto& p : o.prompt_tokens) prompts.push_back(parse_token_list(p));
  if (!o.prompts_file.empty())
    for (auto& p : read_prompts_file(o.prompts_file)) prompts.push_back(std::move(p));
  GenerationParams gen = o.gen;
  if (!o.stop_tokens.empty()) gen.stop_tokens = parse_token_list(o.stop_tokens);
  if (!o.cache_dtype.empty()) gen.cache_dtype = kernels::parse_dtype(o.cache_dtype);
  if (!o.json_out.empty())
    if (std::string why = base::why_not_writable_file(o.json_out); !why.empty())
      throw std::invalid_argument(fmt::format("--json {}: {}", o.json_out, why));
  auto engine = load(o);
  // Every batch is checked before the first token: a bad prompt costs nothing.
  if (std::string e = generation_error(prompts, gen, engine->config().model); !e.empty())
    throw std::invalid_argument(e);
  const size_t batch = o.batch > 0 ? size_t(o.batch) : prompts.size();
  std::vector<double> ttft, tpot;
  nlohmann::json sequences = nlohmann::json::array();
  double total_ms = 0;
  int64_t new_tokens = 0;
  for (size_t first = 0; first < prompts.size(); first += batch) {
    const std::vector<std::vector<int>> part(
        prompts.begin() + long(first),
        prompts.begin() + long(std::min(first + batch, prompts.size())));
    const GenerationResult r = engine->generate(part, gen);
    for (size_t i = 0; i < part.size(); ++i) {
      sequences.push_back({{"prompt_tokens", part[i]}, {"tokens", r.tokens[i]}});
      std::printf("%zu: %s\n", first + i, fmt::format("{}", fmt::join(r.tokens[i], ",")).c_str());
    }
    ttft.insert(ttft.end(), r.ttft_ms.begin(), r.ttft_ms.end());
    tpot.insert(tpot.end(), r.tpot_ms.begin(), r.tpot_ms.end());
    total_ms += r.total_ms;
    new_tokens += r.new_tokens();
  }
  const double tokens_per_s = total_ms > 0 ? double(new_tokens) / (total_ms / 1e3) : 0.0;
  std::printf("%lld new tokens in %.1f ms: %.1f tokens/s (%s)\n",
              static_cast<long long>(new_tokens), total_ms, tokens_per_s,
              engine->backend().name().c_str());
  if (!o.json_out.empty()) {
    const nlohmann::json out = {{"sequences", sequences},
                                {"ttft_ms", percentiles(ttft)},
                                {"tpot_ms", percentiles(tpot)},
                                {"tokens_per_s", tokens_per_s},
                                {"new_tokens", new_tokens},
                                {"dtype", o.dtype},
                                {"model", o.model}};
    base::write_file_atomic(o.json_out, out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hybrid-generate: generation with a key/value cache (GPT-2, Llama)"};
  Options o;
  app.add_option("--model", o.model, "an llm.c checkpoint file or a Hugging Face directory")
      ->required();
  app.add_option("--prompt-tokens", o.prompt_tokens, "a prompt as token ids: 1,2,3 (repeatable)");
  app.add_option("--prompts", o.prompts_file, "a JSON-lines file: {\"tokens\": [...]} a line")
      ->check(CLI::ExistingFile);
  app.add_option("--max-new-tokens", o.gen.max_new_tokens, "tokens to generate per prompt (16)")
      ->check(base::at_least(1));
  app.add_option("--temperature", o.gen.sampling.temperature, "0 is greedy (default)")
      ->check(base::at_least(0));
  app.add_option("--top-k", o.gen.sampling.top_k, "keep the k most likely tokens (0: all)")
      ->check(base::at_least(0));
  app.add_option("--top-p", o.gen.sampling.top_p, "nucleus sampling, in (0, 1] (1: all)")
      ->check(base::greater_than(0));
  app.add_option("--seed", o.gen.sampling.seed, "the sampling seed (0)");
  app.add_option("--stop-tokens", o.stop_tokens, "token ids that end a sequence: 50256,...");
  app.add_option("--batch", o.batch, "prompts generated together (default: all)")
      ->check(base::at_least(1));
  app.add_option("--dtype", o.dtype, "the weights' and activations' type")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--cache-dtype", o.cache_dtype, "the key/value cache's type (default: --dtype)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--json", o.json_out, "write the sequences and latency percentiles here");
  if (auto status = base::parse_command_line(app, argc, argv, 2)) return *status;
  if (o.prompt_tokens.empty() && o.prompts_file.empty()) {
    std::fprintf(stderr, "hybrid-generate: give prompts: --prompt-tokens or --prompts\n");
    return 2;
  }
  try {
    return run(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "hybrid-generate: %s\n", e.what());
    return 2;
  } catch (const DataFileError& e) {
    std::fprintf(stderr, "hybrid-generate: %s\n", e.what());
    return 2;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "hybrid-generate: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hybrid-generate: %s\n", e.what());
    return 1;
  }
}
