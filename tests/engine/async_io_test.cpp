// The NVMe offload's file layer (engine/io) on real files: swap files are
// created preallocated, opened for direct I/O where the filesystem allows it
// (not on tmpfs) and removed with their object; reads and writes through every
// engine and aio setting return what was written, aligned or not; bad
// directories and a full disk are refused with the key, the path and the bytes;
// an I/O error reaches wait() with the file and the bytes; every completed
// request is reported once to the observer.
#include "engine/io/async_io.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include "engine/io/io_requests.h"
#include "engine/io/swap_file.h"
#include "engine_test_util.h"

namespace hybrid {
namespace {

using engine::AioConfig;
using engine::ConfigError;
using engine::io::AsyncIo;
using engine::io::IoEngine;
using engine::io::SwapFile;
using ::testing::HasSubstr;

// Whether the filesystem of `dir` takes direct I/O: an aligned O_DIRECT write
// of a probe file (tmpfs refused it before Linux 6.6).
bool direct_io_works(const std::string& dir) {
  const std::string path = dir + "/direct_probe_" + std::to_string(::getpid());
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0600);
  if (fd < 0) return false;
  void* block = std::aligned_alloc(4096, 4096);
  std::memset(block, 0, 4096);
  const bool ok = ::pwrite(fd, block, 4096, 0) == 4096;
  std::free(block);
  ::close(fd);
  ::unlink(path.c_str());
  return ok;
}

size_t files_in(const std::filesystem::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

std::vector<IoEngine> engines() {
  std::vector<IoEngine> e{IoEngine::threads};
  if (engine::io::io_uring_available()) e.push_back(IoEngine::io_uring);
  return e;
}

// A page-aligned buffer of random bytes (direct I/O needs the alignment).
// aligned_alloc wants a size that is a multiple of the alignment (ASan rejects
// anything else): the allocation is rounded up, `bytes` stays what was asked.
struct Aligned {
  explicit Aligned(size_t n)
      : bytes(n), p(static_cast<char*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {}
  ~Aligned() { std::free(p); }
  size_t bytes;
  char* p;
};

void fill_random(char* p, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = char(rng());
}

TEST(SwapFile, IsPreallocatedAlignedDirectOffTmpfsAndNamelessOnceOpen) {
  test::TempDir dir;
  {
    SwapFile f(dir.path().string(), "zero_optimization.offload_param.nvme_path", "a.swp", 10000);
    EXPECT_EQ(f.path(), dir / "a.swp");
    EXPECT_EQ(f.size(), 12288u) << "rounded up to the direct-I/O alignment";
    EXPECT_EQ(f.size_on_disk(), 12288u) << "preallocated, measured through the open descriptor";
    EXPECT_EQ(f.direct(), direct_io_works(dir.path().string()));
    EXPECT_EQ(files_in(dir.path()), 0u) << "unlinked once open: a killed process leaves nothing";
    // Its data lives on through the descriptor.
    Aligned page(4096);
    fill_random(page.p, 4096, 3);
    ASSERT_EQ(::pwrite(f.fd_for(4096, page.p, 4096), page.p, 4096, 4096), 4096);
    Aligned back(4096);
    ASSERT_EQ(::pread(f.fd_for(4096, back.p, 4096), back.p, 4096, 4096), 4096);
    EXPECT_EQ(std::memcmp(page.p, back.p, 4096), 0);
  }
  EXPECT_EQ(files_in(dir.path()), 0u);

  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm here";
  SwapFile shm("/dev/shm", "key", "hybrid_test_" + std::to_string(::getpid()) + ".swp", 8192);
  EXPECT_EQ(shm.direct(), direct_io_works("/dev/shm")) << "tmpfs, direct I/O since Linux 6.6";
  // Unaligned transfers always take the buffered descriptor; aligned ones the
  // direct one where there is one.
  Aligned page(4096);
  EXPECT_EQ(shm.fd_for(0, page.p, 4096) == shm.fd_for(1, page.p, 4096), !shm.direct());
  EXPECT_EQ(shm.fd_for(1, page.p, 4096), shm.fd_for(0, page.p + 1, 4096));
  EXPECT_EQ(shm.fd_for(0, page.p, 4095), shm.fd_for(0, page.p + 1, 4096));
}

// Aligned and unaligned requests, in flight together, through every engine and
// a range of aio settings, on a direct-I/O filesystem and on tmpfs.
TEST(AsyncIo, EveryEngineAndSettingReadsBackWhatItWrote) {
  test::TempDir dir;
  std::vector<std::string> dirs{dir.path().string()};
  if (std::filesystem::is_directory("/dev/shm")) dirs.push_back("/dev/shm");
  const size_t n = (size_t(3) << 20) + 5000;  // not a multiple of any block
  Aligned src(n + 4096), dst(n + 4096);
  fill_random(src.p, n + 4096, 11);
  int round = 0;
  for (const auto& d : dirs) {
    for (IoEngine e : engines()) {
      for (int64_t block : {int64_t(4096), int64_t(65536), int64_t(1) << 20}) {
        for (auto [threads, depth] : {std::pair{1, 1}, std::pair{2, 4}, std::pair{1, 8}}) {
          for (bool single_submit : {false, true}) {
            AioConfig cfg;
            cfg.block_size = block;
            cfg.thread_count = threads;
            cfg.queue_depth = depth;
            cfg.single_submit = single_submit;
            cfg.overlap_events = !single_submit;
            const std::string what =
                fmt::format("{} {} block {} threads {} depth {} single {}", d, to_string(e), block,
                            threads, depth, single_submit);
            SwapFile f(d, "key", fmt::format("hybrid_test_{}_{}.swp", ::getpid(), round++),
                       n + 8192);
            auto io = engine::io::make_async_io(cfg, e);
            std::memset(dst.p, 0, n + 4096);
            // Aligned bulk, an unaligned offset, an unaligned buffer, a short tail.
            const auto w1 = io->write(f, 0, src.p, n);
            const auto w2 = io->write(f, n + 100, src.p + 7, 3000);
            io->wait(w1);
            io->wait(w2);
            const auto r1 = io->read(f, 0, dst.p, n);
            const auto r2 = io->read(f, n + 100, dst.p + n + 1, 3000);
            io->wait(r2);
            io->wait(r1);
            EXPECT_TRUE(io->done(r1)) << "waited for";
            EXPECT_EQ(0, std::memcmp(dst.p, src.p, n)) << what;
            EXPECT_EQ(0, std::memcmp(dst.p + n + 1, src.p + 7, 3000)) << what;
            EXPECT_EQ(io->read(f, 0, dst.p, 0), 0u) << "an empty request needs no ticket";
          }
        }
      }
    }
  }
}

// The pool by default; io_uring's submission semantics select io_uring where built.
TEST(AsyncIo, EngineChoiceFollowsTheAioKeys) {
  AioConfig cfg;
  EXPECT_EQ(engine::io::choose_io_engine(cfg), IoEngine::threads);
  const IoEngine uring = engine::io::io_uring_available() ? IoEngine::io_uring : IoEngine::threads;
  cfg.single_submit = true;
  EXPECT_EQ(engine::io::choose_io_engine(cfg), uring);
  cfg.single_submit = false;
  cfg.overlap_events = false;
  EXPECT_EQ(engine::io::choose_io_engine(cfg), uring);
  if (!engine::io::io_uring_available()) {
    EXPECT_THROW(engine::io::make_async_io(cfg, IoEngine::io_uring), std::runtime_error);
  }
}

TEST(AsyncIo, ReportsEveryCompletedRequestOnce) {
  test::TempDir dir;
  SwapFile f(dir.path().string(), "key", "obs.swp", 1 << 20);
  std::mutex m;
  std::vector<profiler::IoRecord> records;
  AioConfig cfg;
  cfg.block_size = 65536;
  auto io = engine::io::make_async_io(cfg, IoEngine::threads, [&](const profiler::IoRecord& r) {
    std::lock_guard lock(m);
    records.push_back(r);
  });
  Aligned buf(1 << 20);
  fill_random(buf.p, buf.bytes, 3);
  io->write_sync(f, 0, buf.p, 1 << 20);
  io->write_sync(f, 8192, buf.p, 4096);
  io->read_sync(f, 0, buf.p, 1 << 19);
  std::lock_guard lock(m);
  ASSERT_EQ(records.size(), 3u) << "one record per request, not per block";
  EXPECT_EQ(records[0].kind, profiler::IoKind::nvme_write);
  EXPECT_EQ(records[0].bytes, uint64_t(1) << 20);
  EXPECT_EQ(records[1].bytes, 4096u);
  EXPECT_EQ(records[2].kind, profiler::IoKind::nvme_read);
  EXPECT_EQ(records[2].bytes, uint64_t(1) << 19);
  for (const auto& r : records) {
    EXPECT_LE(r.issue_ns, r.start_ns);
    EXPECT_LT(r.start_ns, r.end_ns);
  }
  EXPECT_LE(records[0].end_ns, records[1].issue_ns) << "waited for before the next";
}

TEST(AsyncIo, AnIoErrorReachesWaitWithTheFileAndTheBytes) {
  test::TempDir dir;
  SwapFile f(dir.path().string(), "key", "err.swp", 1 << 20);
  // A full device: the engine's transfer reports ENOSPC...
  const int full = ::open("/dev/full", O_WRONLY);
  ASSERT_GE(full, 0);
  Aligned buf(4096);
  engine::io::IoBlock b;
  b.write = true;
  b.fd = full;
  b.buf = buf.p;
  b.bytes = 4096;
  EXPECT_EQ(engine::io::transfer_block(b), ENOSPC);
  ::close(full);
  // ... and wait() turns it into an error naming the operation, bytes, offset and file.
  engine::io::IoRequests requests(65536, {}, [] { return int64_t(0); });
  const auto t = requests.submit(true, f, 131072, buf.p, 200000);
  auto blocks = requests.try_take(100);
  ASSERT_EQ(blocks.size(), 4u) << "200000 bytes in 65536-byte blocks";
  for (size_t i = 0; i < blocks.size(); ++i) requests.finished(blocks[i], i == 2 ? ENOSPC : 0);
  try {
    requests.wait(t);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("writing 200000 bytes at offset 131072 of " + f.path()));
    EXPECT_THAT(e.what(), HasSubstr("(at offset 262144)"));
    EXPECT_THAT(e.what(), HasSubstr("No space left on device"));
  }
  EXPECT_THROW(requests.submit(false, f, (1 << 20) - 10, buf.p, 100), std::out_of_range)
      << "past the end of the file";
}

TEST(SwapFile, BadDirectoriesAndAFullDiskAreRefusedNamingKeyPathAndBytes) {
  test::TempDir dir;
  const std::string key = "zero_optimization.offload_optimizer.nvme_path";
  try {
    SwapFile f(dir / "missing", key, "x.swp", 4096);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config: " + key + " \"" + dir / "missing" + "\" cannot be used: no such directory");
  }
  test::TempDir other;
  test::write_json(other / "plain", nlohmann::json::object());
  try {
    SwapFile f(other / "plain", key, "x.swp", 4096);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config: " + key + " \"" + other / "plain" + "\" is not a directory");
  }
  // More than the filesystem has free: refused before anything is written.
  struct statvfs vfs {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &vfs), 0);
  const uint64_t too_much = uint64_t(vfs.f_bavail) * vfs.f_frsize + (uint64_t(1) << 30);
  try {
    SwapFile f(dir.path().string(), key, "big.swp", too_much);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not enough space for " + dir / "big.swp"));
    EXPECT_THAT(e.what(), HasSubstr(key));
    EXPECT_THAT(e.what(), HasSubstr(std::to_string(engine::io::align_up(too_much)) + " bytes"));
  }
  EXPECT_EQ(files_in(dir.path()), 0u) << "nothing left behind";
}

// Root may write anywhere, so the check runs in a child that gives up root.
TEST(SwapFile, AnUnwritableDirectoryIsRefusedNamingTheKey) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.path() / "ro");
  std::filesystem::permissions(dir.path() / "ro", std::filesystem::perms::owner_read |
                                                      std::filesystem::perms::owner_exec |
                                                      std::filesystem::perms::others_read |
                                                      std::filesystem::perms::others_exec);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg = "no error";
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) msg = "setuid failed";
    try {
      SwapFile f(dir / "ro", "zero_optimization.offload_param.nvme_path", "x.swp", 4096);
    } catch (const ConfigError& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      msg = std::string("other: ") + e.what();
    }
    [[maybe_unused]] auto n = ::write(fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, size_t(n));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(msg, "config: zero_optimization.offload_param.nvme_path \"" + dir / "ro" +
                     "\" is not writable: Permission denied");
}

}  // namespace
}  // namespace hybrid
