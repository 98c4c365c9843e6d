#include "autotune/scheduler_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <regex>
#include <utility>
#include <vector>

#include "base/subprocess.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;

namespace {

using K = SchedulerEventKind;

bool is_job_output(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.rfind("slurm-", 0) == 0 && p.extension() == ".out";
}

}  // namespace

SchedulerEvent read_scheduler_line(std::string_view line) {
  // Every phrase names the job; most lines of a trial's log (the ranks' own) do not.
  if (line.find("job") == std::string_view::npos && line.find("Job") == std::string_view::npos)
    return {};
  static const std::array<std::pair<std::regex, K>, 5> kPhrases = {{
      {std::regex(R"(Submitted batch job (\d+))"), K::submitted},                // sbatch
      {std::regex(R"(job (\d+) queued and waiting for resources)"), K::queued},  // srun, salloc
      {std::regex(R"(Pending job allocation (\d+))"), K::queued},                // salloc
      {std::regex(R"(job (\d+) has been allocated resources)"), K::started},     // srun, salloc
      {std::regex(R"(Granted job allocation (\d+))"), K::started},               // salloc
  }};
  std::cmatch m;
  for (const auto& [re, kind] : kPhrases)
    if (std::regex_search(line.data(), line.data() + line.size(), m, re))
      return {kind, std::stoll(m[1].str())};
  return {};
}

SchedulerWatch::SchedulerWatch(fs::path log, Notice notice, double poll_s)
    : log_(std::move(log)), notice_(std::move(notice)), poll_s_(poll_s) {
  thread_ = std::thread([this] { run(); });
}

SchedulerWatch::~SchedulerWatch() { stop(); }

SchedulerJob SchedulerWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
    read_new(true);
  }
  return job_;
}

void SchedulerWatch::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    read_new(false);
    lock.lock();
    wake_.wait_for(lock, std::chrono::duration<double>(poll_s_), [this] { return stopping_; });
  }
}

void SchedulerWatch::read_new(bool to_end) {
  std::ifstream in(log_, std::ios::binary);
  if (!in) return;
  in.seekg(std::streamoff(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  size_t begin = 0;
  for (size_t end; (end = partial_.find('\n', begin)) != std::string::npos; begin = end + 1)
    handle(std::string_view(partial_).substr(begin, end - begin));
  partial_.erase(0, begin);
  if (to_end && !partial_.empty()) {
    handle(partial_);
    partial_.clear();
  }
}

void SchedulerWatch::handle(std::string_view line) {
  const SchedulerEvent e = read_scheduler_line(line);
  if (e.kind == K::none) return;
  job_.job_id = e.job_id;
  if (e.kind == K::queued && !job_.queued && !job_.started) {
    job_.queued = true;
    queued_at_ = std::chrono::steady_clock::now();
    if (notice_) notice_(fmt::format("pending in the scheduler's queue (Slurm job {})", e.job_id));
  } else if (e.kind == K::started && !job_.started) {
    job_.started = true;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - queued_at_).count();
    if (job_.queued && notice_)
      notice_(fmt::format("Slurm job {} started after {:.1f} s in the queue", e.job_id, waited));
  }
}

int append_job_outputs(const fs::path& dir, const fs::path& log) {
  std::error_code ec;
  std::vector<fs::path> outputs;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && is_job_output(entry.path())) outputs.push_back(entry.path());
  std::sort(outputs.begin(), outputs.end());
  std::ofstream out(log, std::ios::app | std::ios::binary);
  for (const auto& p : outputs) {
    out << "[hybrid-tune] the Slurm job's output, " << p.filename().string() << ":\n";
    std::ifstream in(p, std::ios::binary);
    out << in.rdbuf();
    out.clear();  // an empty file sets failbit
    out << "\n";
  }
  return int(outputs.size());
}

void remove_job_outputs(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_job_output(entry.path())) fs::remove(entry.path(), ec);
}

void cancel_job(int64_t job_id) {
  base::SubprocessOptions o;
  o.quiet_stderr = true;
  o.timeout_s = 30;
  base::run_subprocess({"scancel", std::to_string(job_id)}, o);
}

}  // namespace hybrid::autotune
