// Launcher templates: word splitting with quotes, placeholders, {cmd} placement.
#include "autotune/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autotune/tune_error.h"

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
  EXPECT_THROW(expand_launcher("x --cmd={cmd}", cmd, vars), TuneError);
}

TEST(Launcher, DefaultsToMpirunForSeveralRanksOnly) {
  EXPECT_EQ(default_launcher_template(1), "{cmd}");
  const std::string t = default_launcher_template(4);
  EXPECT_THAT(t, ::testing::HasSubstr("-np {nprocs} {cmd}"));
  EXPECT_THAT(t, ::testing::AnyOf(::testing::HasSubstr("mpirun"), ::testing::HasSubstr("mpiexec")));
}

}  // namespace
}  // namespace hybrid::autotune
