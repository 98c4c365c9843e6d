// Launcher templates: how a trial (or the probe) is started on the cluster's
// ranks, e.g. "mpirun -np {nprocs} {cmd}" or "srun -n {nprocs} --exclusive {cmd}".
// No shell is involved: the template is split into words (single and double
// quotes group words), {cmd} as a word of its own becomes the command's words,
// {cmd} inside a word or quoted becomes the command quoted for a shell (for
// templates that hand a shell a command line: sbatch --wait --wrap '{cmd}'), and these
// placeholders are replaced inside any word:
//   {nprocs}   ranks per trial            {key}     the trial key (mbs=4,gas=1,...)
//   {config}   the trial's config file    {dir}     the trial's directory
// A template without {cmd} gets the command appended. A launcher that is a
// script can therefore route trials by key (tests use that to make chosen
// trials crash or hang).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hybrid::autotune {

// "{cmd}" for one process, else "<mpirun> -np {nprocs} {cmd}" with the mpirun
// this build found (or "mpirun" from PATH); with a hostfile always
// "<mpirun> --hostfile {hostfile} -np {nprocs} {cmd}".
std::string default_launcher_template(int nprocs, bool hostfile = false);

// The launcher of a sweep or probe: `tmpl` (empty: the default) with
// {hostfile} replaced by the hostfile's absolute path. The hostfile is read
// and must hold at least `nprocs` slots; throws TuneError naming what is wrong
// (also for {hostfile} in a template without a hostfile).
std::string resolve_launcher(const std::string& tmpl, int nprocs, const std::string& hostfile);

// Splits a template into words; throws TuneError on an unterminated quote or
// an unknown {placeholder}.
std::vector<std::string> split_words(const std::string& text);

std::vector<std::string> expand_launcher(const std::string& tmpl,
                                         const std::vector<std::string>& cmd,
                                         const std::map<std::string, std::string>& vars);

}  // namespace hybrid::autotune
