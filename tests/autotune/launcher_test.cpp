// Launcher templates: word splitting with quotes, placeholders, {cmd} placement.
#include "autotune/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "autotune/hostfile.h"
#include "autotune/tune_error.h"
#include "tests/common/error_of.h"

namespace hybrid::autotune {
namespace {

using V = std::vector<std::string>;

TEST(Launcher, SplitsWordsWithQuotes) {
  EXPECT_EQ(split_words("  mpirun  -np 2\t'a b' \"c d\"e ''"),
            (V{"mpirun", "-np", "2", "a b", "c de", ""}));
  EXPECT_THROW(split_words("srun 'oops"), TuneError);
}

TEST(Launcher, ExpandsPlaceholdersAndTheCommand) {
  const V cmd = {"hybrid-train", "--config", "c.json"};
  const std::map<std::string, std::string> vars = {
      {"nprocs", "4"}, {"key", "mbs=2,gas=1,stage=1"}, {"dir", "/t"}};
  EXPECT_EQ(expand_launcher("srun -n {nprocs} --job-name=tune-{key} {cmd}", cmd, vars),
            (V{"srun", "-n", "4", "--job-name=tune-mbs=2,gas=1,stage=1", "hybrid-train", "--config",
               "c.json"}));
  // Without {cmd} the command goes last.
  EXPECT_EQ(expand_launcher("mpirun -np {nprocs}", cmd, vars),
            (V{"mpirun", "-np", "4", "hybrid-train", "--config", "c.json"}));
  // {cmd} alone: no launcher at all.
  EXPECT_EQ(expand_launcher("{cmd}", cmd, vars), cmd);
  EXPECT_THAT(
      [&] { expand_launcher("mpirun -np {ranks} {cmd}", cmd, vars); },
      ::testing::ThrowsMessage<TuneError>(::testing::HasSubstr("unknown placeholder {ranks}")));
}

TEST(Launcher, QuotesTheCommandForAShellInsideAWord) {
  const V cmd = {"hybrid-train", "--config", "/runs/a b/c.json"};
  EXPECT_EQ(expand_launcher("sbatch --wait -o {dir}/slurm-%j.out --wrap \"srun {cmd}\"", cmd,
                            {{"dir", "/t"}}),
            (V{"sbatch", "--wait", "-o", "/t/slurm-%j.out", "--wrap",
               "srun hybrid-train --config '/runs/a b/c.json'"}));
  // Quoted alone, it is still one word.
  EXPECT_EQ(expand_launcher("sbatch --wrap '{cmd}'", cmd, {}),
            (V{"sbatch", "--wrap", "hybrid-train --config '/runs/a b/c.json'"}));
}

TEST(Launcher, DefaultsToMpirunForSeveralRanksOnly) {
  EXPECT_EQ(default_launcher_template(1), "{cmd}");
  const std::string t = default_launcher_template(4);
  EXPECT_THAT(t, ::testing::HasSubstr("-np {nprocs} {cmd}"));
  EXPECT_THAT(t, ::testing::AnyOf(::testing::HasSubstr("mpirun"), ::testing::HasSubstr("mpiexec")));
}

// Hostfiles: Open MPI's format, errors naming file and line, and the launcher
// that runs trials across the hosts.
class Hostfile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_.string();
  }
  std::string error_of(const std::function<void()>& f) {
    return hybrid::test::error_of<TuneError>(f, "(no error)");
  }
  std::filesystem::path path_ =
      std::filesystem::temp_directory_path() / ("hybrid_hostfile_" + std::to_string(::getpid()));
  void TearDown() override { std::filesystem::remove(path_); }
};

TEST_F(Hostfile, ReadsHostsSlotsAndComments) {
  const auto hosts =
      read_hostfile(write("# two nodes\nnode1 slots=2 max_slots=4\n\n  node2  # one slot\n"));
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "node1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].host, "node2");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(total_slots(hosts), 3);
}

TEST_F(Hostfile, BadLinesAreNamed) {
  const std::string f = write("node1 slots=2\nnode2 slots=zero\n");
  EXPECT_THAT(error_of([&] { read_hostfile(f); }),
              ::testing::HasSubstr(f + ":2 slots: 'zero' is not a positive whole number"));
  write("node1 cpus=4\n");
  EXPECT_THAT(error_of([&] { read_hostfile(f); }), ::testing::HasSubstr(":1: unknown 'cpus=4'"));
  write("node1\nnode1\n");
  EXPECT_THAT(error_of([&] { read_hostfile(f); }),
              ::testing::HasSubstr(":2: host node1 is listed twice"));
  write("# nothing\n");
  EXPECT_THAT(error_of([&] { read_hostfile(f); }), ::testing::HasSubstr("names no host"));
  EXPECT_THAT(error_of([&] { read_hostfile(f + ".missing"); }),
              ::testing::HasSubstr("cannot be read"));
}

TEST_F(Hostfile, ResolvesIntoTheLauncher) {
  const std::string f = write("a slots=2\nb slots=2\n");
  const std::string abs = std::filesystem::absolute(f).string();
  const std::string def = resolve_launcher("", 4, f);
  EXPECT_THAT(def, ::testing::HasSubstr("--hostfile '" + abs + "' -np {nprocs} {cmd}"));
  // One rank still goes through mpirun, to land on a listed host.
  EXPECT_THAT(resolve_launcher("", 1, f), ::testing::HasSubstr("--hostfile"));
  EXPECT_EQ(resolve_launcher("mpirun -hostfile {hostfile} -np {nprocs} {cmd}", 2, f),
            "mpirun -hostfile '" + abs + "' -np {nprocs} {cmd}");
  EXPECT_EQ(split_words(def)[2], abs);
  EXPECT_THAT(error_of([&] { resolve_launcher("", 5, f); }),
              ::testing::HasSubstr("4 slot(s) on 2 host(s), but --nprocs is 5"));
  EXPECT_THAT(error_of([&] { resolve_launcher("srun -n {nprocs} {cmd}", 2, f); }),
              ::testing::HasSubstr("does not use {hostfile}"));
  EXPECT_THAT(error_of([&] { resolve_launcher("mpirun --hostfile {hostfile} {cmd}", 2, ""); }),
              ::testing::HasSubstr("no --hostfile was given"));
  EXPECT_EQ(resolve_launcher("", 1, ""), "{cmd}");
}

}  // namespace
}  // namespace hybrid::autotune
