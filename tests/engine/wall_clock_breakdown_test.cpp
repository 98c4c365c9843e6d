// wall_clock_breakdown on real 2-rank `mpirun` runs of hybrid-train: DeepSpeed's
// timer lines are printed every steps_per_print steps by rank 0, every rank
// stores every step's timers in the run store, and the numbers are consistent
// with the measured step time: each timer > 0, nested timers sum to no more than
// their parent, forward + backward + step to no more than the step.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <sstream>

#include "engine_test_util.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

using Timers = std::map<std::string, double>;  // name -> ms

struct TrainRun {
  test::CommandResult cmd;
  std::map<int64_t, Timers> printed;                 // by step (rank 0's lines)
  std::map<int64_t, double> progress_ms;             // the progress line's step time, by step
  std::map<std::pair<int64_t, int>, Timers> stored;  // by (step, rank)
  profiler::RunProfile profile;
};

// Progress lines "step     2 | ... | 18.0 ms | ..." and the "time (ms) | name: v | ..."
// lines that follow them.
void parse_output(const std::string& out, TrainRun& run) {
  const std::regex progress(R"(^step\s+(\d+) \|.*\| ([0-9.]+) ms \|)");
  std::istringstream in(out);
  std::string line;
  int64_t step = -1;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, progress)) {
      step = std::stoll(m[1]);
      run.progress_ms[step] = std::stod(m[2]);
    } else if (line.rfind("time (ms)", 0) == 0) {
      EXPECT_GE(step, 1) << "a timer line before any progress line: " << line;
      const std::regex item(R"(\| (\w+): ([0-9.]+))");
      for (auto it = std::sregex_iterator(line.begin(), line.end(), item);
           it != std::sregex_iterator(); ++it)
        run.printed[step][(*it)[1]] = std::stod((*it)[2]);
    }
  }
}

TrainRun train(const test::TempDir& dir, const std::string& name, const nlohmann::json& patch,
               int steps) {
  const std::string cfg = dir / (name + ".json"), db = dir / (name + ".db");
  test::write_json(cfg, test::tiny_config_json(patch));
  TrainRun run;
  run.cmd = test::run_command(test::launcher(2) + test::tool("hybrid-train") + " --config " + cfg +
                              " --steps " + std::to_string(steps) + " --db " + db);
  EXPECT_EQ(run.cmd.exit_code, 0) << run.cmd.output;
  if (run.cmd.exit_code != 0) return run;
  parse_output(run.cmd.output, run);
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  run.profile = store.load_profile(store.list_runs().at(0).id);
  for (const auto& t : run.profile.step_timers) run.stored[{t.step, t.rank}][t.name] = t.ms;
  return run;
}

// ZeRO stage 2 with accumulation: every timer runs, reductions overlap backward.
nlohmann::json breakdown_patch(bool on) {
  return {
      {"wall_clock_breakdown", on},
      {"steps_per_print", 2},
      {"gradient_accumulation_steps", 2},
      {"zero_optimization", {{"stage", 2}, {"overlap_comm", true}, {"reduce_bucket_size", 3000}}},
      {"hybrid", {{"model", {{"n_embd", 64}, {"seq_len", 32}}}}}};
}

const char* const kTimerNames[] = {"forward",        "backward",
                                   "backward_inner", "backward_allreduce",
                                   "step",           "optimizer_gradients",
                                   "optimizer_step", "optimizer_allgather"};

TEST(WallClockBreakdown, PrintsAndStoresTimersConsistentWithTheStepTime) {
  test::TempDir dir;
  constexpr int kSteps = 6;
  const TrainRun run = train(dir, "on", breakdown_patch(true), kSteps);
  ASSERT_EQ(run.cmd.exit_code, 0);

  // Printed with the progress line: first step, every steps_per_print, last step.
  std::vector<int64_t> printed_steps;
  for (const auto& [step, timers] : run.printed) printed_steps.push_back(step);
  EXPECT_EQ(printed_steps, (std::vector<int64_t>{1, 2, 4, 6})) << run.cmd.output;
  for (const auto& [step, timers] : run.printed)
    EXPECT_EQ(timers.size(), std::size(kTimerNames)) << "step " << step << "\n" << run.cmd.output;

  // Stored: every step, every rank, every timer.
  ASSERT_EQ(run.stored.size(), size_t(2 * kSteps));
  std::map<std::pair<int64_t, int>, double> step_ms;  // each rank's measured step time
  for (const auto& r : run.profile.step_ranks)
    step_ms[{r.step, r.rank}] = r.compute_ms + r.exposed_comm_ms;
  for (const auto& s : run.profile.steps)
    EXPECT_NEAR(step_ms.at({s.step, 0}), s.step_ms, 1e-9 * s.step_ms);
  double timed = 0, total = 0;
  for (const auto& [key, t] : run.stored) {
    const auto [step, rank] = key;
    const std::string where = fmt::format("step {} rank {}", step, rank);
    ASSERT_EQ(t.size(), std::size(kTimerNames)) << where;
    for (const char* name : kTimerNames) EXPECT_GT(t.at(name), 0.0) << where << " " << name;
    // Nested timers never exceed their parent; the parts never exceed the step.
    const double eps = 1e-6;  // ms: rounding of ns durations converted to ms
    EXPECT_LE(t.at("backward_inner") + t.at("backward_allreduce"), t.at("backward") + eps) << where;
    EXPECT_LE(t.at("optimizer_gradients") + t.at("optimizer_step") + t.at("optimizer_allgather"),
              t.at("step") + eps)
        << where;
    const double parts = t.at("forward") + t.at("backward") + t.at("step");
    EXPECT_LE(parts, step_ms.at(key) + eps) << where;
    if (step > 1) timed += parts, total += step_ms.at(key);  // past the first step's warm-up
  }
  // The share of the step the timers cover is printed, not asserted: it is a ratio of
  // measured times (data loading and the loss average fall outside, and a loaded
  // machine can stretch those); what holds by construction is asserted above.
  std::printf("timers cover %.3f of %.3f ms past step 1\n", timed, total);

  // Printed (2 decimals, DeepSpeed's format) = rank 0's stored values; and within
  // the progress line's step time (1 decimal).
  for (const auto& [step, printed] : run.printed) {
    const Timers& stored = run.stored.at({step, 0});
    for (const auto& [name, ms] : printed)
      EXPECT_NEAR(ms, stored.at(name), 0.005 + 1e-9) << "step " << step << " " << name;
    EXPECT_LE(printed.at("forward") + printed.at("backward") + printed.at("step"),
              run.progress_ms.at(step) + 0.05 + 3 * 0.005)
        << "step " << step;
  }
}

TEST(WallClockBreakdown, OffPrintsAndStoresNothingAndTheFlopsProfilerTurnsItOn) {
  test::TempDir dir;
  const TrainRun off = train(dir, "off", breakdown_patch(false), 4);
  ASSERT_EQ(off.cmd.exit_code, 0);
  EXPECT_TRUE(off.printed.empty()) << off.cmd.output;
  EXPECT_TRUE(off.profile.step_timers.empty());
  EXPECT_EQ(off.profile.steps.size(), 4u);
  // DeepSpeed logs the timers whenever its flops profiler is on.
  auto patch = breakdown_patch(false);
  patch["flops_profiler"] = {
      {"enabled", true}, {"profile_step", 2}, {"output_file", dir / "f.txt"}};
  const TrainRun flops = train(dir, "flops", patch, 4);
  ASSERT_EQ(flops.cmd.exit_code, 0);
  EXPECT_EQ(flops.printed.size(), 3u) << flops.cmd.output;  // steps 1, 2 and 4
  EXPECT_EQ(flops.profile.step_timers.size(), 2u * 4u * std::size(kTimerNames));
}

}  // namespace
}  // namespace hybrid
