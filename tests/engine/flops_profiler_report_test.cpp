// flops_profiler's detailed, module_depth and top_modules shape the report that
// a real hybrid-train run writes to output_file, as DeepSpeed's flops profiler
// does: detailed=false leaves the summary and the aggregated profile (no
// per-module trees), module_depth cuts both at that depth, top_modules limits
// each depth's list of module types.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "engine_test_util.h"

namespace hybrid {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The report of a one-process run profiling step 2 with these flops_profiler keys.
std::string profile(const test::TempDir& dir, const std::string& name, nlohmann::json keys) {
  const std::string cfg = dir / (name + ".json"), report = dir / (name + ".txt");
  keys["enabled"] = true;
  keys["profile_step"] = 2;
  keys["output_file"] = report;
  test::write_json(
      cfg, test::tiny_config_json({{"flops_profiler", keys}, {"hybrid", {{"threads", 1}}}}));
  const auto r =
      test::run_command(test::tool("hybrid-train") + " --quiet --config " + cfg + " --steps 3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return read_text(report);
}

// Rows of each "depth d" table of the aggregated profile, by depth.
std::map<int, int> rows_per_depth(const std::string& report) {
  std::map<int, int> rows;
  const size_t begin = report.find("aggregated profile per depth");
  const size_t end = report.find("forward, per module");
  std::istringstream in(report.substr(begin, end == std::string::npos ? end : end - begin));
  std::string line;
  int depth = -1;
  const std::regex header(R"(^\s+depth (\d+)\s)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, header))
      depth = std::stoi(m[1]), rows[depth] = 0;
    else if (depth >= 0 && line.find("----") == std::string::npos && !line.empty())
      ++rows[depth];
  }
  return rows;
}

TEST(FlopsProfilerReport, DefaultsPrintTheWholeTreeAndOneTypePerDepth) {
  test::TempDir dir;
  const std::string text = profile(dir, "defaults", nlohmann::json::object());
  EXPECT_NE(text.find("profiled step:                              2"), std::string::npos) << text;
  EXPECT_NE(text.find("forward, per module"), std::string::npos);
  EXPECT_NE(text.find("backward, per module"), std::string::npos);
  EXPECT_NE(text.find("h.0.attn.c_attn"), std::string::npos);  // depth 3
  // GPT-2's tree has depths 0..3; one type each (top_modules 1).
  EXPECT_EQ(rows_per_depth(text), (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}})) << text;
}

TEST(FlopsProfilerReport, DetailedFalseDepthAndTopModulesShapeIt) {
  test::TempDir dir;
  const std::string text =
      profile(dir, "shaped", {{"detailed", false}, {"module_depth", 1}, {"top_modules", 2}});
  // The summary and the aggregated profile, no per-module trees.
  EXPECT_NE(text.find("fwd latency per rank"), std::string::npos) << text;
  EXPECT_NE(text.find("aggregated profile per depth"), std::string::npos) << text;
  EXPECT_EQ(text.find("forward, per module"), std::string::npos) << text;
  EXPECT_EQ(text.find("backward, per module"), std::string::npos) << text;
  // Depths 0 and 1 only; depth 1 has five types (Embedding, Block, LayerNorm, Linear,
  // CrossEntropyLoss), two are listed.
  EXPECT_EQ(rows_per_depth(text), (std::map<int, int>{{0, 1}, {1, 2}})) << text;
  EXPECT_NE(text.find("Top 2 module type(s) per depth"), std::string::npos) << text;

  // module_depth also cuts the detailed tree.
  const std::string tree = profile(dir, "depth1", {{"module_depth", 1}});
  EXPECT_NE(tree.find("forward, per module"), std::string::npos);
  EXPECT_NE(tree.find("    h.0 "), std::string::npos) << tree;
  EXPECT_EQ(tree.find("h.0.attn"), std::string::npos) << tree;
}

}  // namespace
}  // namespace hybrid
