// Validation (hybrid.data.val_every, Engine::evaluate): the evaluation forward
// gives the training forward's loss and leaves training exactly as it was
// (losses, weights, loss scale, step counts bit for bit; no traced event) under
// ZeRO 0–3 in one process and, through the real hybrid-train under mpirun,
// under ZeRO 1–3 on two data-parallel ranks and two tensor-parallel ranks; the
// reported loss is the mean over every rank's samples, recomputed here from the
// validation stream; bad settings are named ConfigErrors.
#include <gtest/gtest.h>

#include <regex>

#include "engine/data/data_sources.h"
#include "engine_test_util.h"
#include "tests/common/error_of.h"

namespace hybrid {
namespace {

// The validation micro-batch of these tests: a pattern the training batches
// (fill_salted's salts below 100) never show.
void fill_validation(const Engine& e, std::vector<int32_t>& in, std::vector<int32_t>& tgt) {
  const size_t n = size_t(e.config().train_micro_batch_size_per_gpu) * size_t(e.config().seq_len());
  in.resize(n), tgt.resize(n);
  test::fill_salted(in, tgt, 1000, e.config().model.vocab_size);
}

struct Layout {
  int stage;
  const char* dtype;
};

class EvaluateLeavesTraining : public ::testing::TestWithParam<Layout> {};

TEST_P(EvaluateLeavesTraining, AsItWasBitForBit) {
  const auto [stage, dtype] = GetParam();
  const auto cfg = test::tiny_config(test::zero_training_patch(stage, dtype));
  auto plain = initialize(cfg, make_model(cfg), test::quiet());
  auto evaluated = initialize(cfg, make_model(cfg), test::quiet());
  auto reference = initialize(cfg, make_model(cfg), test::quiet());
  std::vector<int32_t> in, tgt;
  fill_validation(*evaluated, in, tgt);
  // Before any step: the training forward's own loss on the same weights.
  EXPECT_EQ(float(evaluated->evaluate(in.data(), tgt.data())),
            reference->forward(in.data(), tgt.data()));
  std::vector<float> plain_losses, evaluated_losses;
  for (int s = 0; s < 4; ++s) {
    plain_losses.push_back(test::train_on_changing_batches(*plain, 1)[0]);
    evaluated_losses.push_back(test::train_on_changing_batches(*evaluated, 1)[0]);
    auto& tracer = evaluated->tracer();
    tracer.set_enabled(true);
    (void)tracer.drain();
    const double first = evaluated->evaluate(in.data(), tgt.data());
    EXPECT_EQ(evaluated->evaluate(in.data(), tgt.data()), first)
        << "the same weights, the same loss";
    EXPECT_TRUE(std::isfinite(first));
    EXPECT_TRUE(tracer.drain().empty()) << "evaluation records no event";
    EXPECT_TRUE(tracer.enabled()) << "and leaves the tracer as it found it";
    tracer.set_enabled(false);
  }
  EXPECT_EQ(evaluated_losses, plain_losses);
  EXPECT_EQ(evaluated->gather_parameters(), plain->gather_parameters());
  EXPECT_EQ(evaluated->loss_scale(), plain->loss_scale());
  EXPECT_EQ(evaluated->global_step(), plain->global_step());
  EXPECT_EQ(evaluated->applied_steps(), plain->applied_steps());
  EXPECT_EQ(evaluated->skipped_steps(), plain->skipped_steps());
  EXPECT_EQ(evaluated->micro_step(), 0);
}

INSTANTIATE_TEST_SUITE_P(ZeroStages, EvaluateLeavesTraining,
                         ::testing::Values(Layout{0, "fp16"}, Layout{1, "fp32"}, Layout{2, "fp16"},
                                           Layout{3, "bf16"}),
                         [](const auto& info) {
                           return "Stage" + std::to_string(info.param.stage) + "_" +
                                  info.param.dtype;
                         });

TEST(Validation, EvaluateIsRefusedInsideAnAccumulation) {
  const auto cfg = test::tiny_config(test::zero_training_patch(1, "fp32"));  // 2 micro-steps
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  std::vector<int32_t> in, tgt;
  fill_validation(*e, in, tgt);
  e->forward(in.data(), tgt.data());
  e->backward();
  e->step();
  ASSERT_EQ(e->micro_step(), 1);
  EXPECT_NE(test::error_of<std::logic_error>([&] {
              e->evaluate(in.data(), tgt.data());
            }).find("between optimizer steps"),
            std::string::npos);
}

const nlohmann::json kValidationData = {
    {"hybrid", {{"data", {{"synthetic", true}, {"val_every", 2}, {"val_batches", 3}}}}}};

struct RankLayout {
  const char* name;
  nlohmann::json patch;
};

// mpirun -np 2 hybrid-train, 5 steps, with and without validation every 2
// steps: the same losses and weights bit for bit, and the validation after
// steps 2, 4 and 5 (the last), printed and in --result.
TEST(Validation, HybridTrainOnTwoRanksTrainsAlikeWithAndWithoutIt) {
  test::TempDir dir;
  const RankLayout layouts[] = {
      {"zero1", test::zero_training_patch(1, "fp32")},
      {"zero2", test::zero_training_patch(2, "fp16")},
      {"zero3", test::zero_training_patch(3, "bf16")},
      {"tp2", {{"tensor_model_parallel_size", 2}, {"zero_optimization", {{"stage", 1}}}}}};
  for (const auto& [name, patch] : layouts) {
    SCOPED_TRACE(name);
    nlohmann::json with = patch;
    with.merge_patch(kValidationData);
    const auto plain =
        test::run_hybrid_train(dir, std::string(name) + "_plain", 2, patch, "--steps 5");
    const auto validated =
        test::run_hybrid_train(dir, std::string(name) + "_val", 2, with, "--steps 5");
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    ASSERT_EQ(validated.exit_code, 0) << validated.output;
    EXPECT_EQ(test::losses(validated), test::losses(plain));
    EXPECT_EQ(validated.weights, plain.weights);
    EXPECT_FALSE(plain.result.contains("val_losses"));
    const auto& val = validated.result.at("val_losses");
    ASSERT_EQ(val.size(), 3u) << validated.result.dump();
    const std::regex line(R"(step +(\d+) \| val loss (\d+\.\d{4}))");
    std::vector<std::smatch> printed;
    for (auto it = std::sregex_iterator(validated.output.begin(), validated.output.end(), line);
         it != std::sregex_iterator(); ++it)
      printed.push_back(*it);
    ASSERT_EQ(printed.size(), 3u) << "rank 0 prints each:\n" << validated.output;
    const int64_t steps[] = {2, 4, 5};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(val[i].at("step"), steps[i]);
      EXPECT_EQ(std::stoll(printed[i][1]), steps[i]);
      EXPECT_NEAR(std::stod(printed[i][2]), val[i].at("loss").get<double>(), 5e-5);
      EXPECT_TRUE(std::isfinite(val[i].at("loss").get<double>()));
    }
  }
}

// The loss hybrid-train reports under ZeRO-1 on two ranks, recomputed in one
// process from its exported weights: the mean token loss over the 2 ranks × 3
// micro-batches × 2 rows of samples at the start of the validation stream
// (sample j: tokens j·T .. j·T + T, the next ones its targets).
TEST(Validation, TheReportedLossIsTheMeanOverEveryRanksSamples) {
  test::TempDir dir;
  nlohmann::json patch = test::zero_training_patch(1, "fp32");
  patch.merge_patch(kValidationData);
  const auto run = test::run_hybrid_train(dir, "run", 2, patch, "--steps 4");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const double reported = run.result.at("val_losses").back().at("loss");

  const auto cfg = test::tiny_config(patch);
  auto e = initialize(cfg, make_model(cfg), test::quiet());
  e->set_parameters(e->model().read_weights(dir / "run.bin", e->module_tree()));
  const auto val = engine::open_data_sources(cfg).val;
  const int b = cfg.train_micro_batch_size_per_gpu, T = cfg.seq_len();
  std::vector<int32_t> in(size_t(b) * size_t(T)), tgt(in.size());
  double sum = 0.0;
  const int chunks = 2 * 3;  // ranks × val_batches, b samples each
  for (int c = 0; c < chunks; ++c) {
    for (int i = 0; i < b; ++i)
      for (int t = 0; t < T; ++t) {
        const int64_t at = int64_t(c * b + i) * T + t;
        in[size_t(i * T + t)] = int32_t(val.at(at));
        tgt[size_t(i * T + t)] = int32_t(val.at(at + 1));
      }
    sum += e->evaluate(in.data(), tgt.data());
  }
  EXPECT_NEAR(reported, sum / chunks, 1e-5);
}

TEST(Validation, BadSettingsAreNamedConfigErrors) {
  nlohmann::json piped = kValidationData;
  piped["pipeline"] = {{"stages", 2}};
  const std::string pipeline_error =
      test::error_of<engine::ConfigError>([&] { test::tiny_config(piped, 2); });
  EXPECT_NE(pipeline_error.find("hybrid.data.val_every"), std::string::npos) << pipeline_error;
  EXPECT_NE(pipeline_error.find("pipeline.stages 2"), std::string::npos) << pipeline_error;

  const nlohmann::json no_val = {
      {"hybrid", {{"data", {{"train", "shards/*.bin"}, {"val_every", 10}}}}}};
  const std::string stream_error =
      test::error_of<engine::ConfigError>([&] { test::tiny_config(no_val); });
  EXPECT_NE(stream_error.find("needs a validation stream"), std::string::npos) << stream_error;

  const nlohmann::json no_batches = {
      {"hybrid", {{"data", {{"synthetic", true}, {"val_batches", 0}}}}}};
  EXPECT_NE(test::error_of<engine::ConfigError>([&] {
              test::tiny_config(no_batches);
            }).find("hybrid.data.val_batches"),
            std::string::npos);
}

}  // namespace
}  // namespace hybrid
