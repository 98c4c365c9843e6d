// For the suites that time the project's own command-line tools as a user runs
// them (bench_tune and bench_predict run hybrid-tune sweeps): where the tool is,
// a working directory, a run with its output kept in a log.
#pragma once

#include <filesystem>
#include <string>

namespace hybrid::bench {

// `relative` (e.g. "autotune/hybrid-tune") in the build tree this executable
// lives in (build/bench/..).
std::string build_tree_tool(const std::string& relative);

// `keep` when given, else <temp dir>/<prefix>_<pid>; created.
std::filesystem::path working_dir(const std::string& prefix, const std::string& keep);

// Runs `cmd` through the shell with its stdout and stderr in `log`; returns its
// exit status, or 128 + the signal that ended it.
int run_logged(const std::string& cmd, const std::string& log);

}  // namespace hybrid::bench
