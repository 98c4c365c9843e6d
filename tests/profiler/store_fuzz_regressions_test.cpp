// What the run store fuzzer (fuzz/fuzz_run_store.cpp) found: a database whose
// rows hold a status outside the schema's names (a damaged file; the schema's
// CHECKs do not bind a file written by something else) made list_runs throw
// std::invalid_argument without naming the file. Now every status read back is a
// StoreError naming the database and the row. fuzz/regressions/run_store/ holds
// the fuzzer's own input; this test builds the same damage on the current schema.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "profiler/store/run_store.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

std::string read_error(const std::filesystem::path& db,
                       const std::function<void(RunStore&)>& read) {
  RunStore store(db, OpenMode::read_only);
  try {
    read(store);
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

TEST(StoreFuzzRegressions, UnknownStatusesAreStoreErrorsNamingFileAndRow) {
  test::TempDir dir;
  const auto db = dir / "damaged.db";
  {
    RunStore store(db);
    RunInfo run;
    run.name = "r";
    store.create_run(run);
    SweepInfo sweep;
    sweep.name = "s";
    const int64_t sid = store.create_sweep(sweep);
    TrialRow trial;
    trial.sweep_id = sid;
    trial.key = "k";
    store.upsert_trial(trial);
  }
  test::exec_sql(db,
                 "PRAGMA ignore_check_constraints = ON; UPDATE runs SET status = 'bogus'; "
                 "UPDATE sweeps SET status = ''; UPDATE trials SET status = 'done?';");
  const std::string prefix = "database " + db + ": ";
  EXPECT_THAT(read_error(db, [](RunStore& s) { s.list_runs(); }),
              testing::StartsWith(prefix + "run 1: run status must be running|ok|"));
  EXPECT_THAT(read_error(db, [](RunStore& s) { s.sweeps(); }),
              testing::StartsWith(prefix + "sweep 1: sweep status must be"));
  EXPECT_THAT(read_error(db, [](RunStore& s) { s.trials(1); }),
              testing::AllOf(testing::StartsWith(prefix + "trial 1: trial status must be"),
                             testing::HasSubstr("got 'done?'")));
}

}  // namespace
}  // namespace hybrid::profiler
