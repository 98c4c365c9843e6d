// NVMe offload throughput (ZeRO-Infinity's swap files, engine/io) against the
// same disk's sequential rate, measured side by side in the same run and the
// same directory:
// - the reference, dd-style: one thread writes (reads) the file front to back
//   in 1 MiB blocks with O_DIRECT (dd bs=1M oflag=direct conv=notrunc,fdatasync;
//   iflag=direct), then fdatasync;
// - the offload path: a SwapFile written (read) through AsyncIo with the aio
//   settings given, in requests of --request_mib with --inflight of them
//   outstanding, as the optimizer's swap pipeline issues its chunks; then fdatasync.
// Both overwrite files that were written once before (the device's rate, not the
// filesystem's block allocation), both bypass the page cache where the
// filesystem allows direct I/O. Target: the offload path at >= 70 % of the
// sequential rate, read and write.
//
//   build/bench/bench_nvme --dir=/local_nvme          # 5 repetitions, medians and ratios at the
//   end build/bench/bench_nvme --dir=. --mib=1024 --block_size=1048576 --queue_depth=8
//   --thread_count=1
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/host.h"
#include "base/statistics.h"
#include "base/text.h"
#include "bench/suite_main.h"
#include "engine/io/async_io.h"
#include "engine/io/swap_file.h"

namespace {

namespace fs = std::filesystem;
namespace io = hybrid::engine::io;
using Clock = std::chrono::steady_clock;

constexpr size_t kDdBlock = size_t(1) << 20;

struct Options {
  std::string dir = ".";
  uint64_t mib = 256;
  uint64_t request_mib = 16;
  int inflight = 4;
  hybrid::engine::AioConfig aio;  // DeepSpeed's defaults
} g_opt;

// The files and the buffer, made once per process.
struct Env {
  std::string dd_path;
  std::unique_ptr<io::SwapFile> swap;
  char* buf = nullptr;
  size_t bytes = 0;
  bool direct = false;

  static Env& get() {
    static Env env;
    return env;
  }
  ~Env() {
    std::free(buf);
    if (!dd_path.empty()) ::unlink(dd_path.c_str());
  }

 private:
  Env() {
    bytes = size_t(g_opt.mib) << 20;
    buf = static_cast<char*>(std::aligned_alloc(io::kDirectAlignment, bytes));
    for (size_t i = 0; i < bytes; i += 4096) std::memset(buf + i, int(i / 4096 % 251), 4096);
    dd_path = fmt::format("{}/bench_nvme_dd_{}.bin", g_opt.dir, ::getpid());
    swap = std::make_unique<io::SwapFile>(g_opt.dir, "--dir",
                                          fmt::format("bench_nvme_swap_{}.swp", ::getpid()), bytes);
    direct = swap->direct();
    // Written once, so that the timed runs overwrite allocated blocks.
    const int fd = ::open(dd_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    for (size_t off = 0; off < bytes; off += kDdBlock)
      if (::pwrite(fd, buf + off, kDdBlock, off_t(off)) != ssize_t(kDdBlock)) std::abort();
    ::fdatasync(fd);
    ::close(fd);
    auto aio = io::make_async_io(g_opt.aio, io::IoEngine::threads);
    aio->write_sync(*swap, 0, buf, bytes);
    ::fdatasync(swap->fd_for(1, buf, 1));
  }
};

// dd-style: one thread, 1 MiB blocks, front to back, direct I/O where possible.
double dd_pass(bool write) {
  Env& env = Env::get();
  int fd = ::open(env.dd_path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_DIRECT);
  if (fd < 0) fd = ::open(env.dd_path.c_str(), write ? O_WRONLY : O_RDONLY);
  const auto t0 = Clock::now();
  for (size_t off = 0; off < env.bytes; off += kDdBlock) {
    const ssize_t n = write ? ::pwrite(fd, env.buf + off, kDdBlock, off_t(off))
                            : ::pread(fd, env.buf + off, kDdBlock, off_t(off));
    if (n != ssize_t(kDdBlock)) std::abort();
  }
  if (write) ::fdatasync(fd);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  return s;
}

// The offload path: requests of request_mib, `inflight` outstanding.
double aio_pass(bool write, io::IoEngine engine) {
  Env& env = Env::get();
  auto aio = io::make_async_io(g_opt.aio, engine);
  const size_t req = size_t(g_opt.request_mib) << 20;
  std::deque<io::AsyncIo::Ticket> pending;
  const auto t0 = Clock::now();
  for (size_t off = 0; off < env.bytes; off += req) {
    if (int(pending.size()) >= g_opt.inflight) {
      aio->wait(pending.front());
      pending.pop_front();
    }
    const size_t n = std::min(req, env.bytes - off);
    pending.push_back(write ? aio->write(*env.swap, off, env.buf + off, n)
                            : aio->read(*env.swap, off, env.buf + off, n));
  }
  for (auto t : pending) aio->wait(t);
  if (write) ::fdatasync(env.swap->fd_for(1, env.buf, 1));
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::map<std::string, std::vector<double>> g_gbps;  // by benchmark name

void bm(benchmark::State& state, const std::string& name, bool dd, bool write,
        io::IoEngine engine) {
  for (auto _ : state) {
    const double s = dd ? dd_pass(write) : aio_pass(write, engine);
    state.SetIterationTime(s);
    g_gbps[name].push_back(double(Env::get().bytes) / s * 1e-9);
  }
  state.SetBytesProcessed(int64_t(Env::get().bytes) * int64_t(state.iterations()));
}

std::string filesystem_of(const std::string& dir) {
  std::error_code ec;
  const std::string path = fs::canonical(dir, ec).string();
  std::ifstream mounts("/proc/mounts");
  std::string dev, mnt, type, rest, best_dev, best_type;
  size_t best = 0;
  while (mounts >> dev >> mnt >> type && std::getline(mounts, rest))
    if (path.rfind(mnt, 0) == 0 && mnt.size() >= best)
      best = mnt.size(), best_dev = dev, best_type = type;
  return fmt::format("{} ({})", best_dev, best_type);
}

void print_summary() {
  if (g_gbps.empty()) return;
  const Env& env = Env::get();
  const auto& a = g_opt.aio;
  fmt::print(
      "\n{} MiB in {} on {}, direct I/O {}; CPU {}; aio block {} KiB, queue depth {}, {} "
      "thread(s), single_submit {}, overlap_events {}; requests of {} MiB, {} in flight\n",
      g_opt.mib, g_opt.dir, filesystem_of(g_opt.dir), env.direct ? "on" : "off (refused)",
      fmt::format("{} ({} cores)", hybrid::base::read_cpu_info().model,
                  std::thread::hardware_concurrency()),
      a.block_size / 1024, a.queue_depth, a.thread_count, a.single_submit, a.overlap_events,
      g_opt.request_mib, g_opt.inflight);
  for (const char* op : {"write", "read"}) {
    const auto ref = g_gbps.find(fmt::format("nvme/dd/{}", op));
    if (ref == g_gbps.end()) continue;
    const double dd = hybrid::base::median(ref->second);
    fmt::print("  {}: dd-style sequential {:.3f} GB/s (median of {})\n", op, dd,
               ref->second.size());
    for (const auto& [name, v] : g_gbps) {
      if (name.rfind(fmt::format("nvme/aio/{}/", op), 0) != 0) continue;
      const double m = hybrid::base::median(v);
      fmt::print("    {}: {:.3f} GB/s = {:.1f} % of sequential (target >= 70 %){}\n", name, m,
                 100.0 * m / dd, m >= 0.7 * dd ? "" : "  BELOW TARGET");
    }
  }
}

bool take_flag(const std::string& a, const char* name, std::string& value) {
  const std::string prefix = std::string("--") + name + "=";
  if (a.rfind(prefix, 0) != 0) return false;
  value = a.substr(prefix.size());
  return true;
}

// Our flags, taken out of argv before Google Benchmark sees it.
bool take_own_flags(int& argc, char** argv, bool& repetitions) {
  int out = 1;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string v;
    auto positive = [&](auto& dst) {
      const auto n = hybrid::base::parse_int(v);
      ok = ok && n && *n > 0;
      if (n) dst = decltype(+dst)(*n);
    };
    if (take_flag(a, "dir", v)) {
      g_opt.dir = v;
    } else if (take_flag(a, "mib", v)) {
      positive(g_opt.mib);
    } else if (take_flag(a, "request_mib", v)) {
      positive(g_opt.request_mib);
    } else if (take_flag(a, "inflight", v)) {
      positive(g_opt.inflight);
    } else if (take_flag(a, "block_size", v)) {
      positive(g_opt.aio.block_size);
      ok = ok && g_opt.aio.block_size % 4096 == 0;
    } else if (take_flag(a, "queue_depth", v)) {
      positive(g_opt.aio.queue_depth);
    } else if (take_flag(a, "thread_count", v)) {
      positive(g_opt.aio.thread_count);
    } else if (take_flag(a, "single_submit", v)) {
      g_opt.aio.single_submit = v == "1" || v == "true";
    } else if (take_flag(a, "overlap_events", v)) {
      g_opt.aio.overlap_events = v == "1" || v == "true";
    } else {
      repetitions = repetitions || a.starts_with("--benchmark_repetitions");
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  bool repetitions = false;
  if (!take_own_flags(argc, argv, repetitions)) {
    std::fprintf(stderr,
                 "bench_nvme: --mib, --request_mib, --inflight, --queue_depth, --thread_count want "
                 "positive integers; --block_size a positive multiple of 4096\n");
    return 2;
  }
  std::vector<char*> args(argv, argv + argc);
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  args.push_back(interleave.data());
  std::vector<io::IoEngine> engines{io::IoEngine::threads};
  if (io::io_uring_available()) engines.push_back(io::IoEngine::io_uring);
  for (const bool write : {true, false}) {
    const char* op = write ? "write" : "read";
    std::vector<std::pair<std::string, std::pair<bool, io::IoEngine>>> variants{
        {fmt::format("nvme/dd/{}", op), {true, io::IoEngine::threads}}};
    for (auto e : engines)
      variants.push_back({fmt::format("nvme/aio/{}/{}", op, io::to_string(e)), {false, e}});
    for (const auto& [name, v] : variants) {
      auto* b = benchmark::RegisterBenchmark(name.c_str(), bm, name, v.first, write, v.second);
      b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
      if (!repetitions) b->Repetitions(5);
    }
  }
  hybrid::bench::SuiteSteps steps;
  steps.before = []() -> std::optional<int> {
    try {
      Env::get();
      return std::nullopt;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_nvme: %s\n", e.what());
      return 2;
    }
  };
  const int n = int(args.size());
  args.push_back(nullptr);
  steps.summary = print_summary;
  return hybrid::bench::run_suite(n, args.data(), steps);
}
