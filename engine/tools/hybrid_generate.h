// The parts of hybrid-generate (engine/tools/hybrid_generate*.cpp): its
// options, the model it loads, the llama-bench-style measurement (--bench) and
// the run it records in the run store (--db).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/model/registry.h"
#include "profiler/generation_data.h"

namespace hybrid::profiler {
class RunStore;
}  // namespace hybrid::profiler

namespace hybrid::generate_tool {

struct Options {
  std::string model, prompts_file, json_out, dtype = "fp32";
  std::string cache_dtype;                               // "": the weights' dtype
  std::vector<std::string> prompt_tokens, prompt_texts;  // --prompt-tokens, --prompt
  std::string tokenizer;  // "": the model folder's tokenizer.json or tokenizer.model, if any
  std::string stop_tokens;
  int batch = 0;  // 0: every prompt in one batch (--bench: 1)
  engine::GenerationParams gen;
  std::string db, run_name;  // the run store to record the run in, and the run's name
  bool bench = false;
  std::vector<int> bench_pp, bench_tg;  // empty: llama-bench's 512 and 128, within the block
  int repetitions = 5;
};

// StoredModel::format of a hybrid checkpoint directory (engine/checkpoint/checkpoint_model.h).
inline constexpr const char* kCheckpointFormat = "hybrid checkpoint";

// An engine holding `stored` (read from o.model) at o.dtype, its weights read.
std::unique_ptr<Engine> load_engine(const Options& o, const engine::StoredModel& stored);

// --- --bench (hybrid_generate_bench.cpp) -----------------------------------

// One llama-bench test: pp N prefills a prompt of N tokens; tg N decodes N
// tokens after a one-token prompt. Each row of the batch runs it.
struct BenchTest {
  std::string name;  // "pp512", "tg128"
  int prompt_tokens = 0;
  int decode_tokens = 0;  // 0 for pp
};

// The tests the options ask for on a model of this block size; llama-bench's
// defaults (pp 512, tg 128) shrink to fit it, an explicit N that does not fit
// throws std::invalid_argument naming its option (0 skips one kind).
std::vector<BenchTest> bench_tests(const Options& o, int block_size);

// What one test measured over the repetitions.
struct BenchResult {
  BenchTest test;
  std::vector<double> tokens_per_s;  // per repetition
  profiler::GenerationRow row;       // kind bench: mean ± sd, ttft and tpot percentiles
};

// Runs each test once to warm up, then o.repetitions times, on prompts of
// token ids drawn from o.gen.sampling.seed.
std::vector<BenchResult> run_bench(Engine& e, const Options& o, const std::vector<BenchTest>& tests,
                                   const std::string& model);
// llama-bench's table: model, dtype, backend, threads, batch, test, t/s (mean ± sd).
std::string bench_table(const std::vector<BenchResult>& results, const std::string& backend,
                        int threads);
nlohmann::json bench_json(const std::vector<BenchResult>& results);

// --- --db (hybrid_generate_store.cpp) --------------------------------------

// The run hybrid-generate records: created `running` as soon as the inputs
// are checked (before the model loads, like hybrid-train's), then described,
// given its rows and finished. Without --db every call does nothing.
class RunRecord {
 public:
  // Opens the store (creating or migrating it) and creates the run. A store
  // that cannot be opened (a directory, not a run store, a newer schema)
  // throws std::invalid_argument naming --db, the store left as it was.
  // `batch`: the rows generated together (the run's micro batch).
  RunRecord(const Options& o, const engine::StoredModel& stored, int batch);
  ~RunRecord();
  void describe(Engine& e);  // device, backend, parameters
  void add(const profiler::GenerationRow& row);
  void finish(const nlohmann::json& summary);
  // After a failure: the run ends config_error (bad input) or failed.
  void fail(bool bad_input, const std::string& error);
  int64_t run_id() const { return run_id_; }

 private:
  std::unique_ptr<profiler::RunStore> store_;
  int64_t run_id_ = 0;
};

}  // namespace hybrid::generate_tool
