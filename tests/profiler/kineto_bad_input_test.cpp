// Bad PyTorch-trace input through the real `hybrid-prof import-kineto`: each case
// exits non-zero with an error naming the file and what is wrong, and leaves the
// run store byte-for-byte unchanged (one transaction; nothing half-written).
// Also the good path end to end: import, `report gpu --json`, and the text report.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../common/run_command.h"
#include "store_test_util.h"

namespace hybrid::profiler {
namespace {

const std::string kProf = std::string(HYBRID_BINARY_DIR) + "/profiler/hybrid-prof";
const std::filesystem::path kData =
    std::filesystem::path(HYBRID_SOURCE_DIR) / "tests/profiler/data/kineto";

std::string checksum(const std::filesystem::path& p) {
  const std::string bytes = test::read_file(p);
  return std::to_string(
             crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), uInt(bytes.size()))) +
         "/" + std::to_string(bytes.size());
}

class ImportKineto : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kProf)) << kProf;
    db_ = dir_ / "hybrid.db";
    const auto r = run("import-kineto --db " + db_.string() + " " +
                       (kData / "nccl_parser_config_nccl_data.json.gz").string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Fold the WAL into the file so that the checksum covers every committed byte.
    test::exec_sql(db_, "PRAGMA wal_checkpoint(TRUNCATE)");
  }
  hybrid::test::CommandResult run(const std::string& args) {
    return hybrid::test::run_command(kProf + " " + args);
  }
  std::filesystem::path write(const std::string& name, const std::string& bytes) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  // The import must fail naming `what`, and the store must not change.
  void expect_refused(const std::vector<std::filesystem::path>& files, const std::string& what) {
    const std::string before = checksum(db_);
    std::string args = "import-kineto --db " + db_.string();
    for (const auto& f : files) args += " " + f.string();
    const auto r = run(args);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos)
        << "expected '" << what << "' in: " << r.output;
    EXPECT_NE(r.output.find(files.back().filename().string()), std::string::npos) << r.output;
    test::exec_sql(db_, "PRAGMA wal_checkpoint(TRUNCATE)");
    EXPECT_EQ(checksum(db_), before) << "the store changed";
    EXPECT_EQ(test::query_sql(db_, "SELECT count(*) FROM runs"), "1");
  }
  std::string gz(const std::string& text) {
    const auto p = dir_ / "tmp.gz";
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, text.data(), unsigned(text.size()));
    gzclose(f);
    return test::read_file(p);
  }

  test::TempDir dir_;
  std::filesystem::path db_;
};

const std::string kGood = R"({"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"stream": 7, "device": 0}}]})";

TEST_F(ImportKineto, EmptyFile) { expect_refused({write("empty.json", "")}, "the file is empty"); }

TEST_F(ImportKineto, TruncatedGzip) {
  const std::string whole = gz(kGood);
  expect_refused({write("cut.json.gz", whole.substr(0, whole.size() / 2))}, "truncated gzip");
}

TEST_F(ImportKineto, TruncatedJson) {
  expect_refused({write("cut.json", kGood.substr(0, kGood.size() - 20))}, "truncated JSON");
}

TEST_F(ImportKineto, MalformedJson) {
  expect_refused({write("bad.json", "{\"traceEvents\": [}")}, "malformed JSON");
}

TEST_F(ImportKineto, JsonWithoutTraceEvents) {
  expect_refused({write("other.json", R"({"schemaVersion": 1, "events": []})")},
                 "no 'traceEvents' array");
  expect_refused({write("array.json", "[1, 2, 3]")}, "not a trace object");
}

TEST_F(ImportKineto, EventsWithMissingFields) {
  expect_refused(
      {write(
          "nots.json",
          R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1, "args": {"stream": 7}}]})")},
      "has no 'ts'");
  expect_refused(
      {write("nodur.json",
             R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "k", "ts": 1}]})")},
      "has no 'dur'");
  expect_refused(
      {write(
          "nostream.json",
          R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {}}]})")},
      "has no 'args.stream'");
}

// Found by fuzzing: microseconds that overflow int64 nanoseconds are refused,
// whether written as integers, as huge unsigned values or with an exponent.
TEST_F(ImportKineto, TimesBeyondInt64Nanoseconds) {
  int file = 0;
  for (const char* ts : {"9223372036854775807", "18446744073709551615", "-9223372036854775807",
                         "1e300", "9300000000000000.5"}) {
    const std::string name = "far" + std::to_string(file++) + ".json";
    expect_refused(
        {write(name,
               std::string(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "k", "ts": )") +
                   ts + R"(, "dur": 1}]})")},
        "'ts' = ");
  }
  expect_refused(
      {write(
          "fardur.json",
          R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "k", "ts": 1, "dur": 9223372036854776}]})")},
      "is out of range");
}

TEST_F(ImportKineto, TwoFilesClaimingOneRank) {
  const auto a = write("a.json", kGood), b = write("b.json", kGood);
  expect_refused({a, b}, "both claim rank 0");
}

TEST_F(ImportKineto, MissingFile) { expect_refused({dir_ / "nope.json"}, "no such file"); }

// Issue 32: a directory is named as one, with what to give instead.
TEST_F(ImportKineto, DirectoryIsNamedAsOne) {
  std::filesystem::create_directory(dir_ / "traces");
  expect_refused({dir_ / "traces"}, "is a directory; give the trace files themselves");
}

// Issue 32: a trace without anything the analysis can use became an "ok" run of 0 ms.
TEST_F(ImportKineto, TraceWithNothingToAnalyseIsRefused) {
  expect_refused({write("none.json", R"({"traceEvents": []})")}, "nothing to import");
  expect_refused({write("meta.json", R"({"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 0, "tid": 1, "ts": 1, "dur": 2}]})")},
                 "none of its 2 traceEvents");
}

// Issue 32: our own export-trace output was imported as a second, empty "ok" run.
TEST_F(ImportKineto, OurOwnExportIsRefused) {
  const auto out = dir_ / "exported.json";
  const auto r = run("export-trace --db " + db_.string() + " --run 1 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_refused({out}, "written by hybrid-prof export-trace");
}

TEST_F(ImportKineto, GoodJobImportsAndReportsAsJsonAndText) {
  const auto r = run("import-kineto --db " + db_.string() + " --name job " +
                     (kData / "trace_filter_sampled_rank-0.json.gz").string() + " " +
                     (kData / "trace_filter_sampled_rank-1.json.gz").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2\n"), std::string::npos) << r.output;  // the new run's id
  const auto js = run("report gpu --json --db " + db_.string() + " --run 2");
  ASSERT_EQ(js.exit_code, 0) << js.output;
  const auto doc = nlohmann::json::parse(js.output);
  ASSERT_EQ(doc.size(), 1u);
  ASSERT_EQ(doc["ranks"].size(), 2u);
  const auto& r0 = doc["ranks"][0];
  std::set<std::string> keys;
  for (const auto& [k, v] : r0.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"rank", "kernel_span_us", "idle_us", "compute_us",
                                         "non_compute_us", "idle_pct", "compute_pct",
                                         "non_compute_pct", "comm_comp_overlap_pct"}));
  EXPECT_EQ(r0["rank"], 0);
  EXPECT_DOUBLE_EQ(r0["kernel_span_us"].get<double>(), 600058.0);
  EXPECT_NEAR(r0["idle_pct"].get<double>(), 53.56, 0.005);
  EXPECT_NEAR(r0["comm_comp_overlap_pct"].get<double>(), 11.81, 0.005);
  // Without communication the overlap is null.
  ASSERT_EQ(
      run("import-kineto --db " + db_.string() + " " + write("one.json", kGood).string()).exit_code,
      0);
  const auto three = run("report gpu --json --db " + db_.string() + " --run 3");
  EXPECT_TRUE(nlohmann::json::parse(three.output)["ranks"][0]["comm_comp_overlap_pct"].is_null())
      << three.output;
  const auto text = run("report gpu --db " + db_.string() + " --run 2");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  for (const char* s : {"temporal breakdown", "53.56%", "computation + communication",
                        "ncclKernel_SendRecv", "top 10 kernels of rank 1"})
    EXPECT_NE(text.output.find(s), std::string::npos) << s << " in:\n" << text.output;
  EXPECT_EQ(test::query_sql(db_, "SELECT source FROM runs WHERE id = 2"), "kineto");
  // The traces name no host: the run says so rather than naming this machine.
  EXPECT_EQ(test::query_sql(db_, "SELECT host FROM runs WHERE id = 2"), "-");
  EXPECT_EQ(test::query_sql(db_, "SELECT group_concat(step) FROM steps WHERE run_id = 2"),
            "551,552");
}

}  // namespace
}  // namespace hybrid::profiler
