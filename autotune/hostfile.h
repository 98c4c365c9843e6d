// Open MPI hostfiles, as `hybrid-tune --hostfile FILE` takes them: one host per
// line, "NAME [slots=N] [max_slots=N]", '#' starts a comment. Read before the
// first trial so that a typo is an error naming the line, not a failed sweep.
#pragma once

#include <string>
#include <vector>

namespace hybrid::autotune {

struct HostSlots {
  std::string host;
  int slots = 1;  // Open MPI's default without slots=
};

// Throws TuneError naming the file and line: unreadable, no hosts, an unknown
// key, a slot count that is not a positive whole number, a host twice.
std::vector<HostSlots> read_hostfile(const std::string& path);

int total_slots(const std::vector<HostSlots>& hosts);

}  // namespace hybrid::autotune
