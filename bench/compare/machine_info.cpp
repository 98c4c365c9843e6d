#include "bench/compare/machine_info.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "base/host.h"
#include "base/subprocess.h"

namespace hybrid::bench {

namespace {

nlohmann::json env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

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
  const base::CpuInfo cpu = base::read_cpu_info();
  m["cpu_model"] = cpu.model.empty() ? "unknown" : cpu.model;
  m["logical_cpus"] = std::thread::hardware_concurrency();
  m["cpu_flags"] = cpu.flags;
  m["avx512"] = std::find(cpu.flags.begin(), cpu.flags.end(), "avx512f") != cpu.flags.end();
  m["openblas_coretype"] = env_or_null("OPENBLAS_CORETYPE");
  m["omp_num_threads"] = env_or_null("OMP_NUM_THREADS");
  m["hostname"] = base::host_name();
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
