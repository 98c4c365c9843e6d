// Where a communicator's ranks run: the host of each rank, as gathered when the
// communicator is created. Decides whether its collectives cross hosts (the
// link class the comm tracer books them under) and gives each rank its place
// on its host (local rank and size) without trusting a launcher's variables.
#pragma once

#include <string>
#include <vector>

#include "profiler/comm_record.h"

namespace hybrid::engine::comm {

struct Placement {
  std::vector<std::string> host_of_rank;  // index = rank; empty = one unnamed host
  // base::machine_id() of each rank: namespaces of one kernel are one machine
  // (shared memory works between them); empty = all on one machine.
  std::vector<std::string> machine_of_rank;

  bool same_machine(int a, int b) const;
  // True when ranks a and b run on one host (always, when no host is named);
  // std::out_of_range for a rank without a host.
  bool same_host(int a, int b) const;

  int hosts() const;  // distinct hosts (1 when none are named)
  profiler::LinkClass link() const {
    return hosts() > 1 ? profiler::LinkClass::inter_host : profiler::LinkClass::intra_host;
  }
  // Among the ranks on its host, in rank order; 0 and 1 when no host is named.
  int local_rank(int rank) const;
  int local_size(int rank) const;
  // A group's placement: the hosts and machines of `ranks` (ranks of this
  // placement, in the group's rank order). What is unnamed here stays unnamed;
  // a rank past the named ones is std::out_of_range.
  Placement of_ranks(const std::vector<int>& ranks) const;
  // "2 hosts: hyb-node1 ranks 0-1, hyb-node2 ranks 2-3" (hosts in order of
  // their first rank; runs of ranks as ranges).
  std::string describe() const;
};

}  // namespace hybrid::engine::comm
