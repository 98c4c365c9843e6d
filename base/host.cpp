#include "base/host.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "base/text.h"

namespace hybrid::base {

namespace {

// Only flags that select different code paths (ours, oneDNN's, OpenBLAS's) matter.
bool relevant_flag(std::string_view flag) {
  static const std::set<std::string, std::less<>> relevant = {
      "sse4_2",   "avx",      "avx2",     "fma",         "f16c",        "avx512f",     "avx512dq",
      "avx512cd", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
      "amx_tile", "amx_bf16", "amx_int8", "asimd",       "sve",         "hypervisor"};
  return relevant.count(flag) != 0;
}

}  // namespace

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
}

uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  bool have_flags = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() && (!info.model.empty() || have_flags)) break;  // end of the first block
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (info.model.empty() && (key == "model name" || key == "Model")) info.model = value;
    if (!have_flags && (key == "flags" || key == "Features")) {
      have_flags = true;
      std::istringstream words{std::string(value)};
      for (std::string w; words >> w;)
        if (relevant_flag(w)) info.flags.push_back(w);
      std::sort(info.flags.begin(), info.flags.end());
    }
  }
  return info;
}

CpuInfo read_cpu_info() {
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  return parse_cpuinfo(text.str());
}

std::string machine_id() {
  if (const char* forced = std::getenv("HYBRID_MACHINE_ID"); forced && *forced) return forced;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (in && std::getline(in, id) && !trim(id).empty()) return std::string(trim(id));
  return host_name();
}

}  // namespace hybrid::base
