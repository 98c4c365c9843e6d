// hybrid-view itself, under Xvfb: it opens a real window on a fixture database,
// renders every window and writes a screenshot of each, which must have the
// requested size and not be blank; broken databases show their message (in the
// window and on stderr) without a crash; the database is never modified.
// A real PyTorch trace, imported by the real hybrid-prof, shows its GPU streams,
// device times and GPU summary. Skips when Xvfb is not installed; the viewer
// runs on this process's own X server (xvfb_display.h) and its status is its own.
// HYBRID_VIEW_SHOTS=DIR keeps the PNGs (docs/images/ comes from there).
#include <gtest/gtest.h>
#include <stb_image.h>

#include <cmath>
#include <fstream>
#include <set>

#include "tests/gui/generation_db.h"
#include "tests/gui/imported_db.h"
#include "tests/gui/sweep_db.h"
#include "tests/gui/xvfb_display.h"

namespace hybrid::gui {
namespace {

using test::run_command;
using test::TempDir;

const std::string kViewer = std::string(HYBRID_BINARY_DIR) + "/gui/hybrid-view";
// The command with this process's X display in front.
std::string on_display(const std::string& command) {
  return test::xvfb_display().env_prefix() + command;
}
const char* kWindows[] = {"sweeps",      "overview", "layers",  "timeline",
                          "collectives", "gpu",      "compare", "generation"};

struct Image {
  int w = 0, h = 0;
  double luma_stddev = 0;  // over all pixels
  size_t colours = 0;      // distinct RGB values (capped)
};

Image load_png(const std::filesystem::path& p) {
  Image img;
  int n = 0;
  unsigned char* px = stbi_load(p.c_str(), &img.w, &img.h, &n, 3);
  if (!px) return img;
  double sum = 0, sum2 = 0;
  std::set<uint32_t> colours;
  const size_t count = size_t(img.w) * size_t(img.h);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* c = px + 3 * i;
    const double l = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
    sum += l;
    sum2 += l * l;
    if (colours.size() < 100000) colours.insert(uint32_t(c[0]) << 16 | uint32_t(c[1]) << 8 | c[2]);
  }
  stbi_image_free(px);
  const double mean = sum / double(count);
  img.luma_stddev = std::sqrt(std::max(0.0, sum2 / double(count) - mean * mean));
  img.colours = colours.size();
  return img;
}

// Pixels for which `match(r, g, b)` holds.
template <class Match>
size_t count_pixels(const std::filesystem::path& p, Match match) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(p.c_str(), &w, &h, &n, 3);
  if (!px) return 0;
  size_t count = 0;
  for (size_t i = 0; i < size_t(w) * size_t(h); ++i)
    if (match(int(px[3 * i]), int(px[3 * i + 1]), int(px[3 * i + 2]))) ++count;
  stbi_image_free(px);
  return count;
}

size_t count_colour(const std::filesystem::path& p, int r, int g, int b) {
  return count_pixels(p, [&](int x, int y, int z) { return x == r && y == g && z == b; });
}

// The bars of colour (r, g, b), top to bottom: each the widest run of that
// colour over the pixel rows it spans.
std::vector<int> bar_lengths(const std::filesystem::path& p, int r, int g, int b) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(p.c_str(), &w, &h, &n, 3);
  if (!px) return {};
  std::vector<int> bars;
  bool in_bar = false;
  for (int y = 0; y < h; ++y) {
    int widest = 0, run = 0;
    for (int x = 0; x < w; ++x) {
      const unsigned char* c = px + 3 * (size_t(y) * size_t(w) + size_t(x));
      run = c[0] == r && c[1] == g && c[2] == b ? run + 1 : 0;
      widest = std::max(widest, run);
    }
    if (widest > 3 && !in_bar) bars.push_back(0);
    if (widest > 3) bars.back() = std::max(bars.back(), widest);
    in_bar = widest > 3;
  }
  stbi_image_free(px);
  return bars;
}

void keep(const std::filesystem::path& png) {
  if (const char* dir = std::getenv("HYBRID_VIEW_SHOTS")) {
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(png, std::filesystem::path(dir) / png.filename(),
                               std::filesystem::copy_options::overwrite_existing);
  }
}

class Screenshots : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::xvfb_installed()) GTEST_SKIP() << "Xvfb is not installed";
    ASSERT_TRUE(test::xvfb_display().ok()) << "Xvfb did not start";
    ASSERT_TRUE(std::filesystem::exists(kViewer)) << kViewer;
  }
};

// A blank or single-colour frame has a luminance spread near 0; the viewer's
// text, tables and plots give tens of levels and hundreds of colours.
constexpr double kMinStddev = 8.0;
constexpr size_t kMinColours = 50;

// The windows' screenshots `<name>_<window>.png` in `out` (of a run that
// printed `output`): each there, 1280x800 and not blank.
void expect_shots(const TempDir& out, const std::string& name,
                  const std::vector<std::string>& windows, const std::string& output) {
  for (const auto& w : windows) {
    const auto png = out / (name + "_" + w + ".png");
    ASSERT_TRUE(std::filesystem::exists(png)) << png << "\n" << output;
    const Image img = load_png(png);
    EXPECT_EQ(img.w, 1280) << w;
    EXPECT_EQ(img.h, 800) << w;
    EXPECT_GT(img.luma_stddev, kMinStddev) << w;
    EXPECT_GT(img.colours, kMinColours) << w;
    keep(png);
  }
}

// Every window of the database a real short sweep wrote (tests/gui/sweep_db.h).
TEST_F(Screenshots, EveryWindowOfARealSweep) {
  const auto& sweep = test::real_sweep_db();
  HYBRID_REQUIRE_BUILT_DB(sweep);
  const uint64_t before = test::file_checksum(sweep.path);
  TempDir out;
  // The best trial's run, compared with the slowest.
  const std::string best =
      profiler::test::query_sql(sweep.path,
                                "SELECT run_id FROM trials WHERE sweep_id = 1 AND status = 'ok' "
                                "ORDER BY metric DESC LIMIT 1");
  const std::string worst = profiler::test::query_sql(
      sweep.path,
      "SELECT run_id FROM trials WHERE sweep_id = 1 AND status = 'ok' ORDER BY metric LIMIT 1");
  const auto r = run_command(on_display(kViewer) + " " + sweep.path.string() + " --run " + best +
                             " --compare " + worst + " --screenshot " + (out / "shot.png") +
                             " --window all --size 1280x800");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_shots(out, "shot", {std::begin(kWindows), std::end(kWindows)}, r.output);
  if (HasFatalFailure()) return;
  EXPECT_EQ(test::file_checksum(sweep.path), before);
}

TEST_F(Screenshots, EveryWindowOfAFixtureDatabase) {
  test::FixtureDb fx;
  profiler::test::exec_sql(fx.path, "PRAGMA wal_checkpoint(TRUNCATE)");
  const uint64_t before = test::file_checksum(fx.path);
  TempDir out;
  const auto r = run_command(on_display(kViewer) + " " + fx.path.string() + " --run " +
                             std::to_string(fx.gpu_run.run_id) + " --screenshot " +
                             (out / "fixture.png") + " --window all --size 1280x800");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* w : kWindows) {
    const auto png = out / (std::string("fixture_") + w + ".png");
    const Image img = load_png(png);
    EXPECT_EQ(img.w, 1280) << w;
    EXPECT_EQ(img.h, 800) << w;
    EXPECT_GT(img.luma_stddev, kMinStddev) << w;
    keep(png);
  }
  EXPECT_EQ(test::file_checksum(fx.path), before);
}

// The timeline, layer and GPU windows of a real 2-rank PyTorch trace (tests/gui/imported_db.h).
TEST_F(Screenshots, ImportedPyTorchTrace) {
  const auto& imported = test::imported_db();
  HYBRID_REQUIRE_BUILT_DB(imported);
  const uint64_t before = test::file_checksum(imported.path);
  TempDir out;
  const auto r = run_command(on_display(kViewer) + " " + imported.path.string() + " --run " +
                             std::to_string(imported.trace_filter_run) + " --screenshot " +
                             (out / "imported.png") + " --window all --size 1280x800");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_shots(out, "imported", {"timeline", "layers", "gpu"}, r.output);
  if (HasFatalFailure()) return;
  // The GPU window's bars per rank (gui/view/theme.h colours): idle, compute, non-compute.
  const auto gpu = out / "imported_gpu.png";
  EXPECT_GT(count_colour(gpu, 92, 94, 104), 4000u);   // idle: about half of two bars
  EXPECT_GT(count_colour(gpu, 76, 175, 120), 1500u);  // compute (and the overlapped communication)
  EXPECT_GT(count_colour(gpu, 214, 120, 60), 1500u);  // non-compute
  // The timeline's GPU streams: kernel boxes (yellow, darker where merged).
  const size_t kernels =
      count_pixels(out / "imported_timeline.png", [](int red, int green, int blue) {
        return red > 150 && green > 120 && blue < 100 && red - blue > 90;
      });
  EXPECT_GT(kernels, 2000u);
  EXPECT_EQ(test::file_checksum(imported.path), before);
}

// The Generation window of a store with generation rows: its tpot p50 bars
// (gui/view/window_generation.cpp's colour) in proportion to the stored
// figures, none where the store has no rows; the file unchanged.
TEST_F(Screenshots, GenerationWindowDrawsTheStoredRowsAsBars) {
  TempDir out;
  const auto db = out / "gen.db";
  const auto ids = test::write_generation_db(db);
  profiler::test::exec_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  const uint64_t before = test::file_checksum(db);
  const auto png = out / "generation.png";
  const auto r =
      run_command(on_display(kViewer) + " " + db + " --run " + std::to_string(ids.rollout_run) +
                  " --screenshot " + png + " --window generation --size 1280x800");
  ASSERT_EQ(r.status, 0) << r.output;
  const Image img = load_png(png);
  EXPECT_EQ(img.w, 1280);
  EXPECT_GT(img.luma_stddev, kMinStddev);
  keep(png);
  // Six rows, five with a decode step: their p50 bars (20, 10, 30, 35 and 40 ms,
  // tests/gui/generation_db.h) in proportion, on one scale.
  const std::vector<int> bars = bar_lengths(png, 76, 139, 214);
  ASSERT_EQ(bars.size(), 5u);
  const double tpot_p50[] = {20, 10, 30, 35, 40};
  for (size_t i = 0; i < bars.size(); ++i)
    EXPECT_NEAR(double(bars[i]) / bars[4], tpot_p50[i] / tpot_p50[4], 0.01) << i;
  EXPECT_GT(bars[4], 200);
  const size_t p50 = count_colour(png, 76, 139, 214);
  EXPECT_EQ(test::file_checksum(db), before);

  const auto empty = out / "empty.db";
  { profiler::RunStore store(empty); }
  const auto none_png = out / "generation_none.png";
  const auto none = run_command(on_display(kViewer) + " " + empty + " --screenshot " + none_png +
                                " --window generation");
  ASSERT_EQ(none.status, 0) << none.output;
  EXPECT_LT(count_colour(none_png, 76, 139, 214), p50 / 10);
}

TEST_F(Screenshots, OneWindowAtAnotherSize) {
  test::FixtureDb fx;
  TempDir out;
  const auto png = out / "timeline.png";
  const auto r = run_command(on_display(kViewer) + " " + fx.path.string() + " --screenshot " + png +
                             " --window timeline --size 1024x640 --frames 2");
  ASSERT_EQ(r.status, 0) << r.output;
  const Image img = load_png(png);
  EXPECT_EQ(img.w, 1024);
  EXPECT_EQ(img.h, 640);
  EXPECT_GT(img.luma_stddev, kMinStddev);
}

// Each broken database: exit status 2, the message on stderr, a screenshot that
// shows it (not blank), and the file unchanged.
void expect_error_shown(const std::filesystem::path& db, const std::string& message,
                        const std::filesystem::path& png) {
  const bool existed = std::filesystem::exists(db);
  const uint64_t before = existed ? test::file_checksum(db) : 0;
  const auto r = run_command(on_display(kViewer) + " " + db.string() + " --screenshot " +
                             png.string() + " --window layers");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(db.string()), std::string::npos) << r.output;
  const Image img = load_png(png);
  EXPECT_EQ(img.w, 1280);
  EXPECT_GT(img.luma_stddev, 2.0);  // the dark window with the message in it
  EXPECT_GT(img.colours, 5u);
  EXPECT_EQ(std::filesystem::exists(db), existed);
  if (existed) {
    EXPECT_EQ(test::file_checksum(db), before);
  }
  keep(png);
}

TEST_F(Screenshots, BrokenDatabasesShowTheirMessage) {
  TempDir dir;
  expect_error_shown(dir / "missing.db", "no such file", dir / "error_missing.png");
  const auto text = dir / "notes.db";
  std::ofstream(text) << "not a database at all\n";
  expect_error_shown(text, "not a SQLite database", dir / "error_not_sqlite.png");
  const auto future = dir / "future.db";
  { profiler::RunStore store(future); }
  profiler::test::exec_sql(future, "PRAGMA user_version = 99");
  expect_error_shown(future, "newer than this build", dir / "error_newer_schema.png");
}

// Issue 32: "--run 999" printed "has no run 999" and exited 0: loading the
// default comparison run cleared the error. It is a database error (2), and so
// is a --compare run the store does not have.
TEST_F(Screenshots, ARunTheStoreDoesNotHaveExitsTwo) {
  TempDir dir;
  const auto db = dir / "two_runs.db";
  {
    profiler::RunStore store(db);
    store.create_run({});
    store.create_run({});
  }
  for (const char* option : {"--run", "--compare"}) {
    const auto r =
        run_command(on_display(kViewer) + " " + db + " " + option + " 999 --screenshot " +
                    (dir / "missing_run.png") + " --window overview");
    EXPECT_EQ(r.status, 2) << option << ": " << r.output;
    EXPECT_NE(r.output.find(db + " has no run 999"), std::string::npos) << r.output;
  }
}

TEST_F(Screenshots, BadArgumentsAreRefused) {
  const auto r = run_command(kViewer + " x.db --screenshot /tmp/x.png --window nonsense");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("unknown window 'nonsense'"), std::string::npos) << r.output;
  const auto s = run_command(kViewer + " x.db --screenshot /tmp/x.png --size 12x");
  EXPECT_EQ(s.status, 1);
  EXPECT_NE(s.output.find("--size"), std::string::npos) << s.output;
  // Issue 32: CLI11's "Value 0 not in range 1 to 1000", exit 105.
  const auto f = run_command(kViewer + " x.db --screenshot /tmp/x.png --frames 0");
  EXPECT_EQ(f.status, 1);
  EXPECT_NE(f.output.find("--frames: must be between 1 and 1000, got 0"), std::string::npos)
      << f.output;
}

}  // namespace
}  // namespace hybrid::gui
