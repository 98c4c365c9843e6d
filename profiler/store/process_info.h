// Who is writing (with base::host_name()): pid and process start time, so that a run left `running`
// by a process that died can be told apart from one still being written (even
// when the pid has been reused since). Linux /proc; internal to the store.
#pragma once

#include <cstdint>
#include <string>

namespace hybrid::profiler::store {

double unix_now();  // seconds since the epoch, as stored in every *_at column
int64_t this_pid();

// Start time of a process in clock ticks since boot; -1 when no such process.
int64_t process_start_ticks(int64_t pid);

// True when `pid` runs on this host and is not a zombie; when start_ticks >= 0 it
// must also be the same process (same start time) as the one recorded.
bool process_alive(int64_t pid, int64_t start_ticks);

}  // namespace hybrid::profiler::store
