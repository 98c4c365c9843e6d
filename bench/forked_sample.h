// A measurement in a fresh forked child (bench_import): its peak RSS (ru_maxrss
// from wait4) is then that measurement's alone, and it inherits no other
// measurement's heap. The child fills a plain-data report and sends it back
// through a pipe.
#pragma once

#include <cstdint>
#include <functional>

namespace hybrid::bench {

// What a measuring child reports through its pipe (plain data).
struct ChildReport {
  double wall_s = 0;
  double phase_s[4] = {};    // full import: read, translate, analyze, write
  double hwm_mib[4] = {};    // VmHWM after each of those phases
  double rss_start_mib = 0;  // VmRSS when the child started (the parent's pages)
  uint64_t records = 0;      // events in the run record; traceEvents in the DOM
  double db_mib = 0;
  char error[512] = {};
};

struct Sample {
  ChildReport r;
  double cpu_s = 0;         // the child's user + system time
  double peak_rss_mib = 0;  // ru_maxrss of the child
  double growth_mib() const { return peak_rss_mib - r.rss_start_mib; }
};

// A field of /proc/self/status (VmRSS, VmHWM) in MiB.
double proc_status_mib(const char* field);

// Runs `work` in a forked child (its wall time in the report, its exception's
// message as the report's error) and collects its report, CPU time and peak RSS.
Sample run_in_child(const std::function<void(ChildReport&)>& work);

}  // namespace hybrid::bench
