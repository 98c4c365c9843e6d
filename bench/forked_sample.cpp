#include "bench/forked_sample.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace hybrid::bench {

double proc_status_mib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field) && line[std::strlen(field)] == ':')
      return std::atof(line.c_str() + std::strlen(field) + 1) / 1024.0;  // kB
  return 0;
}

namespace {

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k <= 0) return false;
    p += k, n -= size_t(k);
  }
  return true;
}

size_t read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t k = ::read(fd, p + got, n - got);
    if (k <= 0) break;
    got += size_t(k);
  }
  return got;
}

}  // namespace

Sample run_in_child(const std::function<void(ChildReport&)>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    ChildReport r;
    r.rss_start_mib = proc_status_mib("VmRSS");
    try {
      const auto t0 = std::chrono::steady_clock::now();
      work(r);
      r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } catch (const std::exception& e) {
      std::snprintf(r.error, sizeof r.error, "%s", e.what());
    }
    ::_exit(write_all(fds[1], &r, sizeof r) ? 0 : 1);  // no atexit: the parent owns the files
  }
  ::close(fds[1]);
  Sample s;
  const bool complete = read_all(fds[0], &s.r, sizeof s.r) == sizeof s.r;
  ::close(fds[0]);
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  if (!complete) std::snprintf(s.r.error, sizeof s.r.error, "the child died (status %d)", status);
  s.cpu_s = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  s.peak_rss_mib = double(ru.ru_maxrss) / 1024.0;  // KiB on Linux
  return s;
}

}  // namespace hybrid::bench
