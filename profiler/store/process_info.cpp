#include "profiler/store/process_info.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hybrid::profiler::store {

namespace {

// Fields of /proc/<pid>/stat after the command name (which may hold spaces and
// parentheses, so the split starts after the last ')'): [0] = state (field 3),
// [19] = starttime (field 22).
std::vector<std::string> stat_fields(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  const auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

}  // namespace

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t this_pid() { return int64_t(getpid()); }

int64_t process_start_ticks(int64_t pid) {
  const auto f = stat_fields(pid);
  return f.size() > 19 ? std::stoll(f[19]) : -1;
}

bool process_alive(int64_t pid, int64_t start_ticks) {
  if (pid <= 0) return false;
  const auto f = stat_fields(pid);
  if (f.size() <= 19) return false;
  if (f[0] == "Z" || f[0] == "X") return false;  // exited, not yet reaped
  return start_ticks < 0 || std::stoll(f[19]) == start_ticks;
}

}  // namespace hybrid::profiler::store
