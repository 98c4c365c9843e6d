// Tokenizing throughput (issue 30): the byte-level BPE encoding the fortune
// cookies (Debian's fortunes and fortunes-de, 5.5 MB in 34k documents) on 1 and
// on all threads, documents handed out to the threads in chunks, against Hugging
// Face tokenizers' encode_batch on the same documents with the same number of
// threads (RAYON_NUM_THREADS), run beside it in the same run when a Python with
// tokenizers is given (target: ours >= theirs).
//
//   build/bench/bench_tokenize [--tokenizer FILE.json] [--peer-python PYTHON]
//   HYBRID_PEER_PYTHON=/work/peers-venv/bin/python build/bench/bench_tokenize
//
// The tokenizer defaults to the GPT-2-style one the tests use
// (tests/engine/data/tokenizer/gpt2_style.json); the peer is
// bench/peers/hf_tokenize_throughput.py. Without a peer, only our figures print.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/statistics.h"
#include "base/subprocess.h"
#include "bench/suite_main.h"
#include "engine/data/fortune_corpus.h"
#include "engine/data/tokenizer/tokenizer.h"

namespace {

using namespace hybrid;

std::string g_tokenizer =
    std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/tokenizer/gpt2_style.json";
std::string g_peer_python;
std::vector<std::string> g_documents;
size_t g_bytes = 0;
std::map<int, std::vector<double>> g_seconds;  // threads → seconds per pass over the corpus
std::map<int, size_t> g_tokens;

// One pass: the documents in chunks of 64, taken by `threads` threads in turn.
size_t encode_all(const engine::Tokenizer& tok, int threads) {
  std::atomic<size_t> next{0}, tokens{0};
  const auto work = [&] {
    size_t mine = 0;
    for (size_t begin; (begin = next.fetch_add(64)) < g_documents.size();)
      for (size_t i = begin; i < std::min(begin + 64, g_documents.size()); ++i)
        mine += tok.encode(g_documents[i]).size();
    tokens += mine;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  return tokens;
}

void tokenize(benchmark::State& state, int threads) {
  static const auto tok = engine::load_byte_level_bpe(g_tokenizer);
  g_tokens[threads] = encode_all(*tok, threads);  // warm-up: the word cache fills
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(encode_all(*tok, threads));
    g_seconds[threads].push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(g_bytes));
  state.counters["MB_per_s"] = double(g_bytes) / 1e6 / base::median(g_seconds[threads]);
}

// The peer's median MB/s and token count, or nullopt (with the reason printed).
std::optional<std::pair<double, size_t>> peer(int threads) {
  const std::string script =
      std::string(HYBRID_SOURCE_DIR) + "/bench/peers/hf_tokenize_throughput.py";
  const std::string out = "/tmp/bench_tokenize_peer." + std::to_string(getpid()) + ".txt";
  base::SubprocessOptions o;
  o.stdout_file = out;
  o.timeout_s = 600;
  o.env = {{"RAYON_NUM_THREADS", std::to_string(threads)}, {"TOKENIZERS_PARALLELISM", "true"}};
  const auto r = base::run_subprocess({g_peer_python, script, "--tokenizer", g_tokenizer}, o);
  const std::string tail = base::read_tail(out, 2);
  std::remove(out.c_str());
  if (!r.ok()) {
    std::printf("peer (%s threads): %s\n%s\n", std::to_string(threads).c_str(),
                r.describe().c_str(), tail.c_str());
    return std::nullopt;
  }
  std::printf("%s", tail.substr(0, tail.find('\n') + 1).c_str());
  const auto j = nlohmann::json::parse(tail.substr(tail.find('\n') + 1));
  return std::pair{j.at("mb_per_s").get<double>(), j.at("tokens").get<size_t>()};
}

void summary() {
  if (g_seconds.empty()) return;
  std::printf("\nsummary: %s on %zu documents, %.2f MB (medians)\n", g_tokenizer.c_str(),
              g_documents.size(), double(g_bytes) / 1e6);
  for (const auto& [threads, secs] : g_seconds) {
    const double ours = double(g_bytes) / 1e6 / base::median(secs);
    std::printf("hybrid byte-level BPE, %d threads: %.2f MB/s, %zu tokens\n", threads, ours,
                g_tokens[threads]);
    if (g_peer_python.empty()) continue;
    if (const auto theirs = peer(threads)) {
      std::printf("%d threads: hybrid %.2f MB/s, Hugging Face encode_batch %.2f MB/s: %.2fx%s\n",
                  threads, ours, theirs->first, ours / theirs->first,
                  theirs->second == g_tokens[threads] ? "" : " (token counts differ!)");
    }
  }
  if (g_peer_python.empty())
    std::printf("(no peer: give --peer-python or HYBRID_PEER_PYTHON for Hugging Face's figures)\n");
}

}  // namespace

int main(int argc, char** argv) {
  bench::SuiteArgs args(argc, argv, {"--tokenizer", "--peer-python"});
  if (const std::string* t = args.value("--tokenizer")) g_tokenizer = *t;
  if (const char* env = std::getenv("HYBRID_PEER_PYTHON")) g_peer_python = env;
  if (const std::string* p = args.value("--peer-python")) g_peer_python = *p;
  const std::string dir = engine::kFortunesDir;
  for (auto& f : engine::read_fortune_files({dir, dir + "/de"}))
    for (auto& d : f.documents) {
      g_bytes += d.size();
      g_documents.push_back(std::move(d));
    }
  if (g_documents.empty()) {
    std::fprintf(stderr, "bench_tokenize: no fortune files in %s: run scripts/setup.sh\n",
                 dir.c_str());
    return 1;
  }
  std::vector<int> counts{1};
  const int all = int(std::max(1u, std::thread::hardware_concurrency()));
  if (all > 1) counts.push_back(all);
  for (const int threads : counts)
    benchmark::RegisterBenchmark(("tokenize/threads:" + std::to_string(threads)).c_str(),
                                 [threads](benchmark::State& s) { tokenize(s, threads); })
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return bench::run_suite(args.argc(), args.argv(), summary);
}
