// hybrid-prof end to end: the real binary on a real database written through the
// store. Reports carry the stored numbers, the trace parses, and every user error
// (missing database, missing run, unknown step or report) exits non-zero with a
// message naming what was wrong.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "profiler/store/run_store.h"
#include "sample_profile.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

const std::filesystem::path kBinary =
    std::filesystem::path(HYBRID_BINARY_DIR) / "profiler/hybrid-prof";

struct Result {
  int rc = -1;
  std::string out;  // stdout and stderr
};

Result prof(const std::string& args) {
  const std::string cmd = kBinary.string() + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class HybridProf : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kBinary))
        << kBinary << " is missing: build the hybrid-prof target before these tests";
    db_ = dir_ / "hybrid.db";
    RunStore store(db_);
    const RunProfile p = test::sample_profile();
    RunInfo info = p.run;
    run_ = store.create_run(info);
    store.register_rank(run_, 0, 1'000'000'000);
    store.register_rank(run_, 1, 1'001'000'000);
    store.add_modules(run_, p.modules);
    store.add_layer_stats(run_, p.layers);
    store.add_steps(run_, p.steps);
    store.add_step_ranks(run_, p.step_ranks);
    store.add_comm_stats(run_, p.comm);
    store.add_memory(run_, p.memory);
    Event e;
    e.start_ns = 2000;
    e.dur_ns = 1000;
    e.module_id = 3;
    e.step = 3;
    e.category = Category::forward;
    std::vector<Event> events(3, e);
    events[1].rank = 1;
    events[2].lane = kLaneComm;
    events[2].category = Category::comm;
    events[2].name_id = 1;
    events[2].start_ns = 500;
    store.add_events(run_, events, std::vector<std::string>{"forward h.0.attn", "all_reduce"});
    store.finish_run(run_, RunStatus::ok);
  }

  test::TempDir dir_;
  std::string db_;
  int64_t run_ = 0;
  std::string run_args() const { return "--db " + db_ + " --run " + std::to_string(run_); }
};

TEST_F(HybridProf, HelpAndRunList) {
  const Result help = prof("--help");
  EXPECT_EQ(help.rc, 0) << help.out;
  EXPECT_NE(help.out.find("export-trace"), std::string::npos) << help.out;
  const Result runs = prof("runs --db " + db_);
  EXPECT_EQ(runs.rc, 0) << runs.out;
  EXPECT_NE(runs.out.find("tiny"), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find(" ok "), std::string::npos) << runs.out;
}

TEST_F(HybridProf, ReportsCarryTheStoredNumbers) {
  const Result flops = prof("report flops " + run_args() + " --depth 1");
  EXPECT_EQ(flops.rc, 0) << flops.out;
  EXPECT_NE(flops.out.find("24.19 ms [21.50 ms, 26.88 ms]"), std::string::npos) << flops.out;
  EXPECT_NE(flops.out.find("h.0 "), std::string::npos) << flops.out;
  EXPECT_EQ(flops.out.find("h.0.attn"), std::string::npos) << "--depth 1 shows depth ≤ 1 only";
  const Result summary = prof("report flops " + run_args() + " --summary-only");
  EXPECT_EQ(summary.rc, 0) << summary.out;
  EXPECT_NE(summary.out.find("aggregated profile per depth"), std::string::npos) << summary.out;
  EXPECT_EQ(summary.out.find("forward, per module"), std::string::npos) << summary.out;
  const Result comm = prof("report comm " + run_args());
  EXPECT_EQ(comm.rc, 0) << comm.out;
  EXPECT_NE(comm.out.find("0.600 ms"), std::string::npos) << comm.out;
  const Result steps = prof("report steps " + run_args());
  EXPECT_EQ(steps.rc, 0) << steps.out;
  EXPECT_NE(steps.out.find("10.1234"), std::string::npos) << steps.out;
  EXPECT_NE(steps.out.find("nan"), std::string::npos) << "the NaN loss survives the database";
  const Result memory = prof("report memory " + run_args());
  EXPECT_EQ(memory.rc, 0) << memory.out;
  EXPECT_NE(memory.out.find("3.10 GiB"), std::string::npos) << memory.out;
}

// report generate: every run's generation rows, or one run's, as text and as
// JSON, with the rollout breakdown as its own table only when a row has one.
TEST_F(HybridProf, GenerateReportListsTheStoredRows) {
  const Result none = prof("report generate --db " + db_);
  EXPECT_EQ(none.rc, 0) << none.out;
  EXPECT_NE(none.out.find("no generation rows recorded"), std::string::npos) << none.out;
  int64_t bench_run = 0, rollout_run = 0;
  {
    RunStore store(db_);
    RunInfo info;
    info.name = "hybrid-generate --bench";
    bench_run = store.create_run(info);
    GenerationRow b;
    b.kind = GenerationKind::bench;
    b.test = "tg128";
    b.model = "gpt2 124.44 M";
    b.dtype = "bf16";
    b.prompts = 1;
    b.prompt_tokens = 1;
    b.new_tokens = 129;
    b.repetitions = 5;
    b.ttft_ms = LatencyPercentiles{4.25, 4.5, 4.75};
    b.tpot_ms = LatencyPercentiles{21.125, 22.5, 30.0};
    b.tokens_per_s = 46.75;
    b.tokens_per_s_sd = 1.25;
    store.add_generation(bench_run, b);
    info.name = "rollout";
    rollout_run = store.create_run(info);
    GenerationRow r;
    r.kind = GenerationKind::rollout;
    r.batch = 8;
    r.prompts = 8;
    r.new_tokens = 512;
    r.tokens_per_s = 300.5;
    r.step = 7;
    r.e2e_ms = 2000.5;
    r.gather_ms = 12.25;
    r.generate_ms = 1700;
    r.train_ms = 250;
    r.other_ms = 38.25;
    r.samples_per_s = 4.0;
    store.add_generation(rollout_run, r);
  }
  const Result all = prof("report generate --db " + db_);
  EXPECT_EQ(all.rc, 0) << all.out;
  for (const char* cell :
       {"hybrid-generate --bench", "tg128", "gpt2 124.44 M", "21.125", "30.000", "46.75 ± 1.25",
        "rollout", "300.50", "rollout breakdown", "2000.500", "12.250", "38.250", "4.00"})
    EXPECT_NE(all.out.find(cell), std::string::npos) << cell << "\n" << all.out;
  const Result one = prof("report generate --db " + db_ + " --run " + std::to_string(bench_run));
  EXPECT_EQ(one.rc, 0) << one.out;
  EXPECT_NE(one.out.find("tg128"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("rollout"), std::string::npos) << "only run " << bench_run << one.out;
  const Result json = prof("report generate --json --db " + db_);
  ASSERT_EQ(json.rc, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out).at("generations");
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["run_id"], bench_run);
  EXPECT_EQ(j[0]["test"], "tg128");
  EXPECT_EQ(j[0]["tpot_ms"]["p50"], 21.125);
  EXPECT_EQ(j[0]["tokens_per_s_sd"], 1.25);
  EXPECT_TRUE(j[0]["e2e_ms"].is_null());
  EXPECT_EQ(j[1]["kind"], "rollout");
  EXPECT_EQ(j[1]["step"], 7);
  EXPECT_EQ(j[1]["other_ms"], 38.25);
  EXPECT_TRUE(j[1]["ttft_ms"].is_null());
  const Result missing = prof("report generate --db " + db_ + " --run 999");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.out.find("run 999 not found"), std::string::npos) << missing.out;
  const Result no_run = prof("report steps --db " + db_);
  EXPECT_EQ(no_run.rc, 1);
  EXPECT_NE(no_run.out.find("report steps needs --run"), std::string::npos) << no_run.out;
}

TEST_F(HybridProf, ExportsAParsableTrace) {
  const auto out = dir_ / "trace.json";
  const Result r = prof("export-trace " + run_args() + " -o " + out);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("wrote 3 events"), std::string::npos) << r.out;
  const auto trace = nlohmann::json::parse(test::read_file(out));
  int complete = 0;
  for (const auto& e : trace.at("traceEvents")) complete += e.at("ph") == "X";
  EXPECT_EQ(complete, 3);
  EXPECT_TRUE(trace.at("otherData").at("clocks_aligned").get<bool>());
  const Result only1 = prof("export-trace " + run_args() + " --rank 1 -o " + out);
  EXPECT_NE(only1.out.find("wrote 1 events"), std::string::npos) << only1.out;
}

TEST_F(HybridProf, UserErrorsExitNonZeroWithAClearMessage) {
  const Result no_run = prof("report steps --db " + db_ + " --run 999");
  EXPECT_EQ(no_run.rc, 1);
  EXPECT_NE(no_run.out.find("run 999 not found"), std::string::npos) << no_run.out;
  const auto missing = dir_ / "nope.db";
  const Result no_db = prof("runs --db " + missing);
  EXPECT_EQ(no_db.rc, 1);
  EXPECT_NE(no_db.out.find("database " + missing + " does not exist"), std::string::npos)
      << no_db.out;
  EXPECT_FALSE(std::filesystem::exists(missing)) << "a reading command created the database";
  const Result bad_step = prof("report flops " + run_args() + " --step 9");
  EXPECT_EQ(bad_step.rc, 1);
  EXPECT_NE(bad_step.out.find("no layer profile for step 9"), std::string::npos) << bad_step.out;
  const Result bad_kind = prof("report bogus " + run_args());
  EXPECT_NE(bad_kind.rc, 0);
  EXPECT_NE(bad_kind.out.find("bogus"), std::string::npos) << bad_kind.out;
  const Result no_cmd = prof("");
  EXPECT_NE(no_cmd.rc, 0);
}

TEST_F(HybridProf, MigrateUpgradesAnOldDatabaseForTheReaders) {
  const auto old = dir_ / "old.db";
  test::exec_sql(old, test::read_file(std::filesystem::path(HYBRID_SOURCE_DIR) /
                                      "tests/profiler/data/store_schema_v1.sql"));
  const Result refused = prof("runs --db " + old);
  EXPECT_EQ(refused.rc, 1);
  EXPECT_NE(refused.out.find("hybrid-prof migrate"), std::string::npos) << refused.out;
  const Result migrated = prof("migrate --db " + old);
  EXPECT_EQ(migrated.rc, 0) << migrated.out;
  EXPECT_NE(migrated.out.find("schema version 1 → " + std::to_string(RunStore::schema_version())),
            std::string::npos)
      << migrated.out;
  EXPECT_EQ(prof("runs --db " + old).rc, 0);
  const Result stale = prof("mark-stale --db " + db_);
  EXPECT_EQ(stale.rc, 0) << stale.out;
  EXPECT_NE(stale.out.find("marked 0 run(s) failed"), std::string::npos) << stale.out;
}

}  // namespace
}  // namespace hybrid::profiler
