#include "bench/compare/machine_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "base/subprocess.h"

namespace hybrid::bench {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

nlohmann::json env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

CpuInfo parse_cpuinfo(std::string_view text) {
  // Only flags that select different code paths (ours, oneDNN's, OpenBLAS's) matter.
  static const std::set<std::string, std::less<>> relevant = {
      "sse4_2",   "avx",      "avx2",     "fma",         "f16c",        "avx512f",     "avx512dq",
      "avx512cd", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni",
      "amx_tile", "amx_bf16", "amx_int8", "asimd",       "sve",         "hypervisor"};
  CpuInfo info;
  std::size_t pos = 0;
  bool have_flags = false;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() && (!info.model.empty() || have_flags)) break;  // end of the first block
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (info.model.empty() && (key == "model name" || key == "Model")) info.model = value;
    if (!have_flags && (key == "flags" || key == "Features")) {
      have_flags = true;
      std::istringstream words{std::string(value)};
      for (std::string w; words >> w;) {
        if (relevant.count(w)) info.flags.push_back(w);
      }
      std::sort(info.flags.begin(), info.flags.end());
    }
  }
  return info;
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json describe_machine(const std::filesystem::path& source_dir) {
  nlohmann::json m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::stringstream ss;
  ss << cpuinfo.rdbuf();
  CpuInfo cpu = parse_cpuinfo(ss.str());
  m["cpu_model"] = cpu.model.empty() ? "unknown" : cpu.model;
  m["logical_cpus"] = std::thread::hardware_concurrency();
  m["cpu_flags"] = cpu.flags;
  m["avx512"] = std::find(cpu.flags.begin(), cpu.flags.end(), "avx512f") != cpu.flags.end();
  m["openblas_coretype"] = env_or_null("OPENBLAS_CORETYPE");
  m["omp_num_threads"] = env_or_null("OMP_NUM_THREADS");
  char host[256] = {};
  m["hostname"] = ::gethostname(host, sizeof host - 1) == 0 ? std::string(host) : "unknown";
  struct utsname uts {};
  m["kernel"] = ::uname(&uts) == 0 ? std::string(uts.sysname) + " " + uts.release : "unknown";
  m["date"] = utc_timestamp();
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) == 3) m["load_average"] = {load[0], load[1], load[2]};
  m["git_revision"] = nullptr;
  m["git_dirty"] = nullptr;
  std::error_code ec;
  if (std::filesystem::exists(source_dir / ".git", ec)) {
    const std::string dir = source_dir.string();
    if (auto rev = base::capture_output({"git", "-C", dir, "rev-parse", "HEAD"})) {
      m["git_revision"] = *rev;
      if (auto status = base::capture_output(
              {"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"})) {
        m["git_dirty"] = !status->empty();
      }
    }
  }
  return m;
}

}  // namespace hybrid::bench
