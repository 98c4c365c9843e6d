// The engine's two communicators on 2 real MPI ranks, with a device stand-in
// (tests/engine/device_double.h) so that device and host memory can be told
// apart: the host values that only travel with several ranks (loss average,
// run-id broadcast, norm/overflow agreement, checkpoint flags, the FLOPs
// report's gather, full_master) go to the host communicator on host memory;
// gradient and parameter collectives go to the device communicator on device
// memory. Both wrap the one MPI communicator of the process. Also: the
// offloaded optimizer on 2 ranks ends with the on-device optimizer's weights;
// tensor parallelism (tp 2) and pipeline stages (pp 2) split groups of both
// communicators (the device one for activations and gradients, the host one
// for the norm, the loss and gather_parameters: the wiring a GPU's NCCL groups
// get) and train as with one communicator. Generation under ZeRO-3 on the two
// ranks (each module's parameters gathered by both for every forward): the
// tokens of ZeRO-0 on the same weights, greedy and sampled with a seed, each
// rank its own prompts and stop tokens; a refusal on one rank is every rank's;
// hybrid_engine.pin_parameters gathers every layer once per call, not once per
// forward; hybrid_engine.inference_tp_size 2 reshards a ZeRO-3 run over both
// ranks and gives each rank the tokens it gets alone; tensor parallelism over the two ranks
// generates the whole model's tokens.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "engine/comm/factory.h"
#include "engine/engine.h"
#include "mpi_test_harness.h"
#include "tests/common/error_of.h"
#include "tests/common/tiny_gpt2.h"
#include "tests/engine/checked_communicator.h"
#include "tests/engine/device_double.h"

namespace hybrid::test {
namespace {

struct Wired {
  std::unique_ptr<Engine> engine;
  const CheckedCommunicator* host = nullptr;
  const CheckedCommunicator* device = nullptr;
  const DeviceDouble* backend = nullptr;
};

// tests/engine/engine_test_util.h's tiny GPT-2 (that header wants the engine
// tests' launcher settings).
engine::Config tiny_config(const nlohmann::json& patch) {
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", 2},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-3}, {"weight_decay", 0.01}}}}},
      {"hybrid", {{"model", tiny_gpt2_model()}, {"data", "synthetic"}, {"seed", 7}}},
  };
  j.merge_patch(patch);
  return engine::parse_config(j, world());
}

Wired make_engine(const nlohmann::json& patch) {
  auto cfg = tiny_config(patch);
  auto backend = std::make_unique<DeviceDouble>();
  const DeviceDouble* dev = backend.get();
  auto host = std::make_unique<CheckedCommunicator>(
      comm(), "host communicator got device memory:", [dev](const void* p, size_t) {
        return !dev->owns(p);
      });
  auto device = std::make_unique<CheckedCommunicator>(
      comm(), "device communicator got host memory:", [dev](const void* p, size_t n) {
        return dev->owns(p, n);
      });
  Wired w;
  w.host = host.get();
  w.device = device.get();
  w.backend = dev;
  EngineOptions o;
  o.quiet = true;
  o.backend = std::move(backend);
  o.communicator = std::move(host);
  o.device_communicator = std::move(device);
  w.engine = initialize(cfg, make_model(cfg), std::move(o));
  return w;
}

void train(Engine& e, int steps) {
  const auto& cfg = e.config();
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<int32_t> in(n), tgt(n);
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < n; ++i) {
      in[i] =
          int32_t((i * 5 + size_t(s) * 3 + size_t(e.rank()) * 7) % size_t(cfg.model.vocab_size));
      tgt[i] = int32_t((i * 5 + size_t(s) * 3 + 1) % size_t(cfg.model.vocab_size));
    }
    const float l = e.forward(in, tgt);
    e.backward();
    e.step();
    e.mean_over_ranks(l);  // what the trainer does every step
  }
}

nlohmann::json patch_for(int stage, bool offload) {
  nlohmann::json p = {{"bf16", {{"enabled", true}}},
                      {"gradient_clipping", 1.0},
                      {"zero_optimization",
                       {{"stage", stage},
                        {"overlap_comm", true},
                        {"reduce_bucket_size", 3000},
                        {"stage3_param_persistence_threshold", 200}}}};
  if (offload) p["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  return p;
}

TEST_F(MpiTest, HostValuesGoToTheHostCommunicatorDeviceBuffersToTheDeviceOne) {
  char path[256] = {};
  std::filesystem::path dir;
  if (rank() == 0) {
    std::random_device rd;
    dir = std::filesystem::temp_directory_path() / ("hybrid_engine_comms_" + std::to_string(rd()));
    std::snprintf(path, sizeof path, "%s", dir.c_str());
  }
  comm().broadcast(path, sizeof path, 0);
  dir = path;

  using K = profiler::CollectiveKind;
  for (int stage : {0, 1, 2, 3}) {
    for (bool offload : {false, true}) {
      auto w = make_engine(patch_for(stage, offload));
      Engine& e = *w.engine;
      train(e, 3);
      EXPECT_EQ(e.broadcast_from_rank0(100 + rank()), 100);
      const auto all = e.all_gather_floats({float(rank()), 10.0f + float(rank())});
      EXPECT_EQ(all, (std::vector<float>{0.0f, 10.0f, 1.0f, 11.0f}));
      const std::string tag = fmt::format("s{}{}", stage, offload ? "off" : "dev");
      e.save_checkpoint(dir.string(), tag);
      e.load_checkpoint(dir.string(), tag);
      const auto weights = e.gather_parameters();
      EXPECT_EQ(weights.size(), size_t(e.param_count()));

      const std::string where = fmt::format("stage {}{}", stage, offload ? ", offload" : "");
      for (const auto& v : w.host->violations()) ADD_FAILURE() << where << ": " << v;
      for (const auto& v : w.device->violations()) ADD_FAILURE() << where << ": " << v;
      // Several ranks: the norm/overflow agreement (stages 1-3) and the loss average are host
      // all-reduces.
      EXPECT_GE(w.host->calls(K::all_reduce), 3u + (stage > 0 ? 3u : 0u) + 1u) << where;
      EXPECT_GE(w.host->calls(K::broadcast), 1u) << where;
      EXPECT_GE(w.host->calls(K::barrier), 1u) << where;
      if (stage > 0) {
        EXPECT_GE(w.host->calls(K::all_gather), 2u)
            << where << ": all_gather_floats and full_master";
      }
      if (stage == 0) {
        EXPECT_GT(w.device->calls(K::all_reduce), 0u) << where;
      }
      if (stage > 0) {
        EXPECT_GT(w.device->calls(K::reduce_scatter), 0u) << where;
      }
      if (stage > 0) {
        EXPECT_GT(w.device->calls(K::all_gather), 0u) << where << ": updated parameters";
      }
      EXPECT_EQ(w.device->calls(K::broadcast) + w.device->calls(K::barrier), 0u) << where;
    }
  }
  comm().barrier();
  if (rank() == 0) std::filesystem::remove_all(dir);
}

// One communicator for everything, as on the CPU (both communicators one
// object, one set of groups).
std::unique_ptr<Engine> make_single_comm_engine(const nlohmann::json& patch) {
  auto cfg = tiny_config(patch);
  EngineOptions o;
  o.quiet = true;
  o.communicator = std::make_unique<CheckedCommunicator>(comm(), "unchecked",
                                                         [](const void*, size_t) { return true; });
  return initialize(cfg, make_model(cfg), std::move(o));
}

// The 1-bit optimizers step on the device: their momentum, errors and
// exchange buffers are device memory, the compressed exchange (two
// all_to_alls and two all_gathers a call) goes to the device communicator,
// and the weights are the CPU backend's over one communicator, bit for bit.
TEST_F(MpiTest, OneBitOptimizersCompressInDeviceMemoryOverTheDeviceCommunicator) {
  using K = profiler::CollectiveKind;
  for (const std::string type : {"OneBitAdam", "ZeroOneAdam", "OneBitLamb"}) {
    const bool zero_one = type == "ZeroOneAdam";
    const nlohmann::json patch = {
        {"bf16", {{"enabled", true}}},
        {"optimizer",
         {{"type", type},
          {"params", {{"lr", 1e-4}, {zero_one ? "var_freeze_step" : "freeze_step", 4}}}}}};
    auto w = make_engine(patch);
    train(*w.engine, 10);
    for (const auto& v : w.host->violations()) ADD_FAILURE() << type << ": " << v;
    for (const auto& v : w.device->violations()) ADD_FAILURE() << type << ": " << v;
    for (const auto& v : w.backend->foreign_buffers())
      ADD_FAILURE() << type << ": a 1-bit op got host memory: " << v;
    EXPECT_GT(w.backend->onebit_buffers_checked(), 0u) << type;
    // OneBitAdam and OneBitLamb compress at steps 5 to 10; ZeroOneAdam at least once.
    if (!zero_one) {
      EXPECT_EQ(w.device->calls(K::all_to_all), 12u) << type;
    }
    EXPECT_GT(w.device->calls(K::all_to_all), 0u) << type;
    EXPECT_EQ(w.host->calls(K::all_to_all), 0u) << type;
    EXPECT_EQ(w.engine->skipped_steps(), 0) << type << ": a step overflowed";
    const auto on_device = w.engine->gather_parameters();
    EXPECT_TRUE(std::all_of(on_device.begin(), on_device.end(), [](float x) {
      return std::isfinite(x);
    })) << type;
    auto cpu = make_single_comm_engine(patch);
    train(*cpu, 10);
    EXPECT_EQ(on_device, cpu->gather_parameters()) << type;
  }
}

// train_batch: the pipeline's schedule, or forward/backward/step without one.
std::vector<float> train_batches(Engine& e, int steps) {
  const auto& cfg = e.config();
  const int gas = cfg.gradient_accumulation_steps;
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * cfg.model.seq_len;
  std::vector<std::vector<int32_t>> in(static_cast<size_t>(gas), std::vector<int32_t>(n));
  std::vector<std::vector<int32_t>> tgt = in;
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    std::vector<const int32_t*> ins, tgts;
    for (int k = 0; k < gas; ++k) {
      for (size_t i = 0; i < n; ++i) {
        const size_t v = size_t(cfg.model.vocab_size);
        in[size_t(k)][i] = int32_t((i * 5 + size_t(s * gas + k) * 3) % v);
        tgt[size_t(k)][i] = int32_t((i * 7 + size_t(s * gas + k) + 1) % v);
      }
      ins.push_back(in[size_t(k)].data());
      tgts.push_back(tgt[size_t(k)].data());
    }
    losses.push_back(e.train_batch(ins, tgts));
  }
  return losses;
}

TEST_F(MpiTest, TensorAndPipelineGroupsSplitBothCommunicators) {
  using K = profiler::CollectiveKind;
  const nlohmann::json common = {{"gradient_accumulation_steps", 4},
                                 {"gradient_clipping", 0.5},
                                 {"zero_optimization", {{"stage", 1}}}};
  for (const bool pipeline : {false, true}) {
    nlohmann::json patch = common;
    if (pipeline)
      patch["pipeline"] = {{"stages", 2}};
    else
      patch["tensor_model_parallel_size"] = 2;
    const char* where = pipeline ? "pp 2" : "tp 2";
    auto w = make_engine(patch);
    auto plain = make_single_comm_engine(patch);
    const auto split = train_batches(*w.engine, 3), one = train_batches(*plain, 3);
    ASSERT_EQ(split.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i) EXPECT_FLOAT_EQ(split[i], one[i]) << where << i;
    EXPECT_EQ(w.engine->gather_parameters(), plain->gather_parameters()) << where;

    for (const auto& v : w.host->violations()) ADD_FAILURE() << where << ": " << v;
    for (const auto& v : w.device->violations()) ADD_FAILURE() << where << ": " << v;
    EXPECT_EQ(w.device->splits(), pipeline ? 4 : 3) << where << ": tp, dp, pp (and tied)";
    EXPECT_EQ(w.host->splits(), 3) << where << ": tp, dp, pp";
    // The norm agreement over tp or pp and gather_parameters' host vectors.
    EXPECT_GT(w.host->calls(K::all_reduce), 0u) << where;
    if (pipeline) {
      EXPECT_GT(w.device->calls(K::send) + w.device->calls(K::recv), 0u) << where;
      EXPECT_EQ(w.host->calls(K::send) + w.host->calls(K::recv), 0u) << where;
      EXPECT_GE(w.host->calls(K::broadcast), 3u) << where << ": each step's loss";
      EXPECT_GT(w.device->calls(K::all_reduce), 0u) << where << ": the tied gradients";
    } else {
      EXPECT_GT(w.device->calls(K::all_reduce), 0u) << where << ": the blocks' sums";
      EXPECT_GT(w.device->calls(K::all_gather), 0u) << where << ": the loss statistics";
      EXPECT_GT(w.host->calls(K::all_gather), 0u) << where << ": gather_parameters";
    }
    // (The wrappers forward without counting: only the groups' names are checked here.)
    const auto groups = w.engine->comm_counters_by_group();
    ASSERT_EQ(groups.size(), pipeline ? 4u : 3u) << where;
    EXPECT_EQ(groups[1].first, "dp") << where;
    EXPECT_EQ(groups[2].first, pipeline ? "pp" : "tp") << where;
  }
}

TEST_F(MpiTest, OffloadedOptimizerMatchesTheOnDeviceOneOnTwoRanks) {
  for (int stage : {1, 3}) {
    auto a = make_engine(patch_for(stage, false));
    auto b = make_engine(patch_for(stage, true));
    train(*a.engine, 4);
    train(*b.engine, 4);
    const auto wa = a.engine->gather_parameters(), wb = b.engine->gather_parameters();
    EXPECT_TRUE(wa == wb) << "stage " << stage;
    EXPECT_EQ(b.engine->allocator().stats().peak[size_t(engine::MemCategory::optimizer)], 0u);
    EXPECT_EQ(b.engine->host_allocator().stats().peak[size_t(engine::MemCategory::optimizer)],
              uint64_t(b.engine->zero().optimizer_range().size()) * 8);
  }
}

TEST_F(MpiTest, ZeroStage3GeneratesWhatZeroStage0DoesEachRankItsOwnPrompts) {
  auto z3 = make_engine(
      {{"zero_optimization", {{"stage", 3}, {"stage3_param_persistence_threshold", 100}}}});
  auto z0 = make_engine(nlohmann::json::object());
  train(*z3.engine, 4);
  z0.engine->set_parameters(z3.engine->gather_parameters());
  const std::vector<std::vector<int>> prompts =
      rank() == 0 ? std::vector<std::vector<int>>{{1, 2, 3}, {7}}
                  : std::vector<std::vector<int>>{{4, 5, 6, 7, 8}, {9, 9}};
  engine::GenerationParams p;
  p.max_new_tokens = 6;
  const auto greedy = z0.engine->generate(prompts, p);
  EXPECT_EQ(z3.engine->generate(prompts, p).tokens, greedy.tokens);
  // Rank 0's first row ends at its first token; rank 1 decodes on, rank 0 with it.
  p.stop_tokens = rank() == 0 ? std::vector<int>{greedy.tokens[0][0]} : std::vector<int>{};
  EXPECT_EQ(z3.engine->generate(prompts, p).tokens, z0.engine->generate(prompts, p).tokens);
  p.stop_tokens.clear();
  p.sampling.temperature = 1.0f;
  p.sampling.top_p = 0.9f;
  p.sampling.seed = 5;
  const auto sampled = z3.engine->generate(prompts, p);
  EXPECT_EQ(sampled.tokens, z3.engine->generate(prompts, p).tokens);
  EXPECT_EQ(sampled.tokens, z0.engine->generate(prompts, p).tokens);
  // One rank's bad prompt, or a different count of prompts: both ranks refuse.
  const auto refusal = [&](const std::vector<std::vector<int>>& mine) {
    return error_of<std::invalid_argument>([&] { z3.engine->generate(mine, p); });
  };
  const std::string bad = refusal(rank() == 1 ? std::vector<std::vector<int>>{{1}, {64}} : prompts);
  EXPECT_NE(bad.find(rank() == 1 ? "token 64" : "another rank's prompts"), std::string::npos)
      << bad;
  const std::string counts = refusal(rank() == 1 ? std::vector<std::vector<int>>{{1}} : prompts);
  EXPECT_NE(counts.find("every rank needs as many prompts"), std::string::npos) << counts;
  // Nothing was left half done: both still generate together.
  EXPECT_EQ(z3.engine->generate(prompts, p).tokens, sampled.tokens);
}

TEST_F(MpiTest, ZeroStage3PinnedParametersGatherOncePerCallAndGenerateTheSame) {
  const nlohmann::json zero = {{"stage", 3}, {"stage3_param_persistence_threshold", 100}};
  auto pinned = make_engine({{"zero_optimization", zero}, {"hybrid_engine", {{"enabled", true}}}});
  auto per_layer = make_engine({{"zero_optimization", zero},
                                {"hybrid_engine", {{"enabled", true}, {"pin_parameters", false}}}});
  train(*pinned.engine, 2);
  train(*per_layer.engine, 2);
  const std::vector<std::vector<int>> prompts = {{1 + rank(), 2, 3}, {7}};
  // The device communicator's all-gathers for a call of n new tokens.
  const auto gathers = [&](Wired& w, int n, std::vector<std::vector<int>>* tokens = nullptr) {
    engine::GenerationParams p;
    p.max_new_tokens = n;
    const uint64_t before = w.device->calls(profiler::CollectiveKind::all_gather);
    const auto r = w.engine->generate(prompts, p);
    if (tokens) *tokens = r.tokens;
    return w.device->calls(profiler::CollectiveKind::all_gather) - before;
  };
  std::vector<std::vector<int>> a, b;
  const uint64_t pinned_short = gathers(pinned, 2), pinned_long = gathers(pinned, 6, &a);
  const uint64_t layer_short = gathers(per_layer, 2), layer_long = gathers(per_layer, 6, &b);
  EXPECT_EQ(a, b);
  // Pinned: one all-gather per unit, whatever the forwards; per layer: every
  // forward gathers again (two prefills and n - 1 decode steps).
  EXPECT_GT(pinned_short, 0u);
  EXPECT_EQ(pinned_short, pinned_long);
  EXPECT_GT(layer_long, layer_short);
  EXPECT_EQ((layer_long - layer_short) % 4, 0u);
  EXPECT_EQ(layer_short % 3, 0u);
  // Each forward gathers at least every unit the pin gathers once (a tied
  // embedding twice: before the embedding and before the head).
  EXPECT_GE(layer_short / 3, pinned_short);
  // Training goes on after the pin is released, as it does after per-layer gathering.
  train(*pinned.engine, 1);
  train(*per_layer.engine, 1);
  EXPECT_TRUE(pinned.engine->gather_parameters() == per_layer.engine->gather_parameters());
}

nlohmann::json llama_model() {
  return {{"type", "llama"},  {"n_layer", 2},   {"n_embd", 32},
          {"n_head", 4},      {"n_kv_head", 2}, {"intermediate_size", 48},
          {"vocab_size", 64}, {"seq_len", 16},  {"tie_embeddings", false}};
}

TEST_F(MpiTest, TensorParallelTwoGeneratesTheTokensOfTheWholeModelOnOneRank) {
  for (const char* family : {"gpt2", "llama"}) {
    SCOPED_TRACE(family);
    const nlohmann::json model = std::string(family) == "llama" ? llama_model() : tiny_gpt2_model();
    const nlohmann::json family_patch = {{"hybrid", {{"model", model}}}};
    nlohmann::json tp_patch = family_patch;
    tp_patch["tensor_model_parallel_size"] = 2;
    auto tp = make_engine(tp_patch);
    // The same model on this process alone (world 1): tp 2's steps take the
    // same batches, so both hold the same weights up to the order of sums.
    auto one_cfg = tiny_config(family_patch);
    one_cfg = engine::parse_config(one_cfg.raw, 1);
    EngineOptions one;
    one.quiet = true;
    one.communicator = engine::comm::make_single_communicator();
    auto whole = initialize(one_cfg, make_model(one_cfg), std::move(one));
    train_batches(*tp.engine, 3);
    train_batches(*whole, 3);
    // Both ranks of the tensor-parallel group generate the same rows.
    const std::vector<std::vector<int>> prompts = {{1, 2, 3}, {7}, {4, 5, 6, 7, 8}, {9, 9}};
    engine::GenerationParams p;
    p.max_new_tokens = 8;
    EXPECT_EQ(tp.engine->generate(prompts, p).tokens, whole->generate(prompts, p).tokens);
    p.sampling.temperature = 1.0f;
    p.sampling.seed = 11;
    EXPECT_EQ(tp.engine->generate(prompts, p).tokens, whole->generate(prompts, p).tokens);
    // Training goes on after generating as the single-rank layout's does.
    train_batches(*tp.engine, 1);
    train_batches(*whole, 1);
    const auto a = tp.engine->gather_parameters(), b = whole->gather_parameters();
    ASSERT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-5f);
  }
}

TEST_F(MpiTest, InferenceTpSizeTwoReshardsAZeroStage3RunAndGeneratesWhatEachRankDoesAlone) {
  for (const bool llama : {false, true}) {
    SCOPED_TRACE(llama ? "llama" : "gpt2");
    nlohmann::json patch = {
        {"zero_optimization", {{"stage", 3}, {"stage3_param_persistence_threshold", 100}}},
        {"hybrid", {{"model", llama ? llama_model() : tiny_gpt2_model()}}}};
    auto alone = make_engine(patch);
    patch["hybrid_engine"] = {{"enabled", true}, {"inference_tp_size", 2}};
    auto resharded = make_engine(patch);
    train(*alone.engine, 3);
    train(*resharded.engine, 3);
    // Each rank its own prompts, of different counts of tokens.
    const std::vector<std::vector<int>> prompts =
        rank() == 0 ? std::vector<std::vector<int>>{{1, 2, 3}, {7}}
                    : std::vector<std::vector<int>>{{4, 5, 6, 7, 8}, {9, 9}};
    engine::GenerationParams p;
    p.max_new_tokens = 8;
    const auto greedy = alone.engine->generate(prompts, p);
    EXPECT_EQ(resharded.engine->generate(prompts, p).tokens, greedy.tokens);
    p.sampling.temperature = 1.0f;
    p.sampling.top_k = 20;
    p.sampling.seed = 3;
    p.stop_tokens = {17, 40};  // the same on every rank of a group
    const auto sampled = resharded.engine->generate(prompts, p);
    EXPECT_EQ(sampled.tokens, alone.engine->generate(prompts, p).tokens);
    EXPECT_EQ(sampled.tokens, resharded.engine->generate(prompts, p).tokens) << "run after run";
    // The group batches its rows: different stop tokens are refused on both ranks.
    p.stop_tokens = {rank()};
    const std::string why =
        error_of<std::invalid_argument>([&] { resharded.engine->generate(prompts, p); });
    EXPECT_NE(why.find("need the same max_new_tokens, sampling, stop tokens and"),
              std::string::npos)
        << why;
    // Generating never touched the trainer's weights.
    train(*alone.engine, 1);
    train(*resharded.engine, 1);
    EXPECT_TRUE(alone.engine->gather_parameters() == resharded.engine->gather_parameters());
  }
}

}  // namespace
}  // namespace hybrid::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int failed = 0;
  {
    auto c = hybrid::engine::comm::make_communicator(hybrid::test::test_clock_ns);
    auto* mpi = dynamic_cast<hybrid::engine::comm::MpiCommunicator*>(c.get());
    if (!mpi) {
      std::fprintf(stderr, "make_communicator under mpirun gave '%s', not 'mpi'\n",
                   c->name().c_str());
      return 1;
    }
    hybrid::test::Watchdog watchdog(240, mpi->rank());
    failed = hybrid::test::run_all_tests_on(*mpi);
  }
  return failed ? 1 : 0;
}
