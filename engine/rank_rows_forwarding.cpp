#include "engine/rank_rows_forwarding.h"

#include <exception>
#include <stdexcept>
#include <string>

#include "profiler/store/run_store.h"

namespace hybrid::engine {

std::vector<int> ranks_away_from_rank0(const comm::Placement& placement) {
  std::vector<int> away;
  for (int r = 1; r < int(placement.machine_of_rank.size()); ++r)
    if (!placement.same_machine(r, 0)) away.push_back(r);
  return away;
}

int forward_rank_rows(comm::Communicator& comm, profiler::RunStore* store, int64_t run_id,
                      const profiler::RankRows& mine) {
  const int me = comm.rank();
  const auto away = ranks_away_from_rank0(comm.placement());
  if (me == 0 && !away.empty() && !store)
    throw std::logic_error("forward_rank_rows: rank 0 has no run store to write the rows into");
  std::string bytes;
  std::exception_ptr failed;
  int stored = 0;
  // Point to point: only rank 0 receives each payload.
  for (int sender : away) {
    if (me != sender && me != 0) continue;
    uint64_t size = 0;
    if (me == sender) {
      bytes = profiler::encode_rank_rows(mine);
      size = bytes.size();
      comm.send(&size, sizeof size, 0);
      comm.send(bytes.data(), bytes.size(), 0);
      continue;
    }
    comm.recv(&size, sizeof size, sender);
    bytes.assign(size_t(size), '\0');
    comm.recv(bytes.data(), bytes.size(), sender);
    if (failed) continue;
    try {
      store->add_rank_rows(run_id, profiler::decode_rank_rows(bytes));
      ++stored;
    } catch (...) {
      failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
  return stored;
}

}  // namespace hybrid::engine
