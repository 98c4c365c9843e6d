#include "autotune/probe.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "autotune/alpha_beta.h"
#include "autotune/launcher.h"
#include "autotune/outcome.h"
#include "autotune/process.h"
#include "autotune/tune_error.h"
#include "base/atomic_file.h"
#include "base/launcher_env.h"
#include "base/statistics.h"
#include "base/subprocess.h"
#include "base/units.h"
#include "engine/comm/factory.h"
#include "kernels/cpu/gemm_selection.h"
#include "kernels/cpu/openblas.h"
#include "kernels/dtype.h"
#include "kernels/registry.h"
#include "profiler/comm_tracer.h"

namespace hybrid::autotune {

using nlohmann::json;
using profiler::CollectiveKind;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Device buffer filled with small values (no denormals, no overflow in 16 bits).
void* filled(kernels::Backend& be, kernels::DType dt, size_t n) {
  const size_t bytes = n * kernels::dtype_size(dt);
  void* p = be.allocate(bytes);
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = float((i * 7919) % 17) / 17.0f - 0.5f;
  std::vector<uint8_t> conv(bytes);
  kernels::dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* out = reinterpret_cast<T*>(conv.data());
    for (size_t i = 0; i < n; ++i) out[i] = kernels::store<T>(host[i]);
  });
  be.copy_from_host(p, conv.data(), bytes);
  return p;
}

// GEMM FLOP/s per rank: all ranks at once, as in training; the mean over ranks.
// On a CPU every provider is measured (kernels/cpu/gemm_provider.h) and the
// fastest one's rate counts, as training's "auto" choice runs it; `providers`
// gets each one's rate for the report.
double measure_gemm(const ProbeOptions& opts, kernels::Backend& be, kernels::DType dt,
                    engine::comm::Communicator& comm, std::string& providers) {
  const int n = opts.gemm_size > 0                        ? opts.gemm_size
                : be.kind() == kernels::BackendKind::cuda ? 8192
                                                          : 1024;
  comm.barrier();
  float rate = 0;
  if (be.kind() == kernels::BackendKind::cpu) {
    for (auto p : kernels::cpu::usable_gemm_providers(dt)) {
      const double r = kernels::cpu::measure_gemm(p, {dt, false, true, n, n, n},
                                                  std::max(1, opts.gemm_iters), 0);
      providers += fmt::format("{}{} {}", providers.empty() ? "" : ", ",
                               kernels::cpu::provider_name(p), base::format_flop_rate(r * 1e9));
      rate = std::max(rate, float(r * 1e9));
    }
    const auto& blas = kernels::cpu::openblas::library();
    if (blas.loaded) providers += fmt::format(" (OpenBLAS core {})", blas.core);
  } else {
    void* A = filled(be, dt, size_t(n) * n);
    void* B = filled(be, dt, size_t(n) * n);
    void* C = filled(be, dt, size_t(n) * n);
    std::vector<double> times;
    for (int i = 0; i < opts.gemm_iters + 1; ++i) {
      const auto t0 = Clock::now();
      be.gemm(dt, false, true, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
      be.synchronize();
      if (i > 0) times.push_back(seconds_since(t0));  // first: warm-up
    }
    for (void* p : {A, B, C}) be.deallocate(p, size_t(n) * n * kernels::dtype_size(dt));
    rate = float(2.0 * double(n) * n * n / base::median(times));
  }
  comm.all_reduce(&rate, 1, kernels::DType::f32, engine::comm::ReduceOp::sum);
  return double(rate) / comm.world_size();
}

// One collective at one message size (host buffers, fp32 elements).
profiler::BandwidthSample measure_collective(const ProbeOptions& opts, CollectiveKind kind,
                                             uint64_t bytes, engine::comm::Communicator& comm) {
  const int world = comm.world_size();
  const size_t total =
      std::max<size_t>(size_t(bytes / 4) / size_t(world) * size_t(world), size_t(world));
  std::vector<float> send(total, 1.0f), recv(total, 0.0f);
  const std::vector<size_t> counts(size_t(world), total / size_t(world));
  const int iters = opts.comm_iters > 0 ? opts.comm_iters : bytes <= (1u << 20) ? 11 : 5;
  auto once = [&] {
    switch (kind) {
      case CollectiveKind::all_reduce:
        comm.all_reduce(send.data(), total, kernels::DType::f32, engine::comm::ReduceOp::sum);
        break;
      case CollectiveKind::reduce_scatter:
        comm.reduce_scatter(send.data(), recv.data(), counts, kernels::DType::f32,
                            engine::comm::ReduceOp::sum);
        break;
      case CollectiveKind::all_to_all:  // a block of total / W values to each rank
        comm.all_to_all(send.data(), recv.data(), total / size_t(world) * sizeof(float));
        break;
      default:
        comm.all_gather(send.data(), recv.data(), counts, kernels::DType::f32);
    }
  };
  once();  // warm-up (connection setup)
  // Each call timed on its own, the median kept: on a shared host a mean
  // would measure the scheduler's time slices, not the interconnect.
  std::vector<double> per_call;
  for (int i = 0; i < iters; ++i) {
    comm.barrier();
    const auto t0 = Clock::now();
    once();
    per_call.push_back(seconds_since(t0));
  }
  float t = float(base::median(per_call));
  comm.all_reduce(&t, 1, kernels::DType::f32,
                  engine::comm::ReduceOp::max);  // the slowest rank bounds it
  const uint64_t msg = uint64_t(total) * 4;
  const double algbw = double(msg) / double(t) / 1e9;
  return {std::string(profiler::collective_name(kind)),
          msg,
          algbw,
          algbw * profiler::bus_factor(kind, world),
          std::string(profiler::link_name(comm.placement().link())),
          world};
}

}  // namespace

profiler::ProbeResult run_probe_worker(const ProbeOptions& opts, const std::string& out_path) {
  // Threads as the engine sets them: the host's cores shared by its ranks.
  const base::LauncherEnv env = base::launcher_env();
  omp_set_num_threads(
      std::max(1, int(std::max(1u, std::thread::hardware_concurrency())) / env.local_size));
  auto comm = engine::comm::make_communicator();
  const int world = comm->world_size();
  auto choice = kernels::make_backend(opts.device, env.local_rank);
  kernels::Backend& be = *choice.backend;
  const kernels::DType dt = kernels::parse_dtype(opts.dtype);
  if (!be.supports(dt))
    throw TuneError(fmt::format("probe: dtype {} is not supported by {}", opts.dtype, be.name()));

  profiler::ProbeResult res;
  res.world_size = world;
  res.gemm_ranks = env.local_size;
  res.host_cpus = int(std::thread::hardware_concurrency());
  std::string providers;
  res.gemm_flops_per_s = measure_gemm(opts, be, dt, *comm, providers);
  res.device = fmt::format("{} | gemm {}{}", be.name(), kernels::dtype_name(dt),
                           providers.empty() ? "" : ": " + providers);

  std::vector<uint64_t> sizes = opts.message_bytes;
  if (sizes.empty())
    for (uint64_t b = 4096; b <= (uint64_t(16) << 20); b *= 4) sizes.push_back(b);
  if (world > 1)  // else nothing moves between ranks
    for (CollectiveKind kind :
         {CollectiveKind::all_reduce, CollectiveKind::reduce_scatter, CollectiveKind::all_gather,
          CollectiveKind::all_to_all})  // all_to_all: the 1-bit optimizers' exchange
      for (uint64_t bytes : sizes)
        res.bandwidth.push_back(measure_collective(opts, kind, bytes, *comm));
  if (comm->rank() == 0 && !out_path.empty())
    base::write_file_atomic(out_path, probe_to_json(res).dump(2) + "\n");
  comm->barrier();
  return res;
}

json probe_to_json(const profiler::ProbeResult& p) {
  json bw = json::array();
  for (const auto& b : p.bandwidth)
    bw.push_back({{"op", b.op},
                  {"bytes", b.bytes},
                  {"algbw_gbps", b.algbw_gbps},
                  {"busbw_gbps", b.busbw_gbps},
                  {"link", b.link},
                  {"ranks", b.ranks}});
  return {{"host", p.host},
          {"device", p.device},
          {"world_size", p.world_size},
          {"gemm_flops_per_s", p.gemm_flops_per_s},
          {"gemm_ranks", p.gemm_ranks},
          {"host_cpus", p.host_cpus},
          {"bandwidth", bw}};
}

profiler::ProbeResult probe_from_json(const json& j) {
  profiler::ProbeResult p;
  try {
    p.host = j.value("host", "");
    p.device = j.at("device").get<std::string>();
    p.world_size = j.at("world_size").get<int>();
    p.gemm_flops_per_s = j.at("gemm_flops_per_s").get<double>();
    p.gemm_ranks = j.value("gemm_ranks", 0);
    p.host_cpus = j.value("host_cpus", 0);
    for (const auto& b : j.at("bandwidth"))
      p.bandwidth.push_back({b.at("op").get<std::string>(), b.at("bytes").get<uint64_t>(),
                             b.at("algbw_gbps").get<double>(), b.at("busbw_gbps").get<double>(),
                             b.value("link", "intra_host"), b.value("ranks", 0)});
  } catch (const json::exception& e) {
    throw TuneError(fmt::format("probe: result JSON is incomplete: {}", e.what()));
  }
  if (!(p.gemm_flops_per_s > 0)) throw TuneError("probe: gemm_flops_per_s must be positive");
  return p;
}

profiler::ProbeResult launch_probe(const std::string& self, int nprocs,
                                   const std::string& launcher_template, const ProbeOptions& opts,
                                   const std::string& work_dir, double timeout_s) {
  std::filesystem::create_directories(work_dir);
  const std::string out = (std::filesystem::path(work_dir) / "probe.json").string();
  const std::string log = (std::filesystem::path(work_dir) / "probe.log").string();
  std::filesystem::remove(out);
  std::filesystem::remove(log);
  std::vector<std::string> cmd = {self,       "probe-worker", "--out",   out,
                                  "--device", opts.device,    "--dtype", opts.dtype};
  if (opts.gemm_size > 0) cmd.insert(cmd.end(), {"--gemm-size", std::to_string(opts.gemm_size)});
  for (uint64_t b : opts.message_bytes)
    cmd.insert(cmd.end(), {"--message-bytes", std::to_string(b)});
  const std::string tmpl =
      launcher_template.empty() ? default_launcher_template(nprocs) : launcher_template;
  const auto argv = expand_launcher(
      tmpl, cmd,
      {{"nprocs", std::to_string(nprocs)}, {"key", "probe"}, {"config", ""}, {"dir", work_dir}});
  ProcessOptions po;
  po.timeout_s = timeout_s;
  po.log_path = log;
  const ProcessResult pr = run_process(argv, po);
  const ResultFile rf = read_result_file(out);
  if (!pr.exit.started || pr.exit.timed_out || pr.exit.signal || pr.exit.exit_code != 0 || !rf.json)
    throw TuneError(fmt::format("probe: `{}` failed ({}{}); last output:\n{}",
                                base::shell_join(argv),
                                pr.exit.timed_out ? fmt::format("timed out after {:g} s", timeout_s)
                                : !pr.exit.started ? pr.exit.start_error
                                : pr.exit.signal   ? "killed by " + signal_name(pr.exit.signal)
                                                 : fmt::format("exit status {}", pr.exit.exit_code),
                                rf.json ? "" : ", " + rf.problem, base::read_tail(log, 20)));
  return probe_from_json(*rf.json);
}

profiler::ProbeResult launch_probe_on_hosts(const std::string& self, int nprocs,
                                            const std::vector<HostSlots>& hosts,
                                            const ProbeOptions& opts, const std::string& work_dir,
                                            double timeout_s) {
  namespace fs = std::filesystem;
  fs::create_directories(work_dir);
  auto launch = [&](const std::string& name, const std::vector<HostSlots>& on) {
    const std::string file = (fs::path(work_dir) / ("hosts." + name)).string();
    std::string text;
    for (const auto& h : on) text += fmt::format("{} slots={}\n", h.host, h.slots);
    base::write_file_atomic(file, text);
    return launch_probe(self, total_slots(on), resolve_launcher("", total_slots(on), file), opts,
                        (fs::path(work_dir) / name).string(), timeout_s);
  };
  const std::vector<HostSlots> one_host = {{hosts.at(0).host, std::min(hosts[0].slots, nprocs)}};
  profiler::ProbeResult res = launch("intra", one_host);
  std::vector<HostSlots> across;
  for (size_t i = 0; i < hosts.size() && int(i) < nprocs; ++i) across.push_back({hosts[i].host, 1});
  if (across.size() >= 2) {
    const profiler::ProbeResult inter = launch("inter", across);
    res.bandwidth.insert(res.bandwidth.end(), inter.bandwidth.begin(), inter.bandwidth.end());
    res.world_size = std::max(res.world_size, inter.world_size);
    res.device += fmt::format("; across {} hosts", across.size());
  }
  return res;
}

std::string format_probe(const profiler::ProbeResult& p) {
  std::string s = fmt::format("probe{}: {} rank(s) on {}, {}\n  GEMM: {} per rank\n",
                              p.id ? fmt::format(" {}", p.id) : "", p.world_size,
                              p.host.empty() ? "this host" : p.host, p.device,
                              base::format_flop_rate(p.gemm_flops_per_s));
  if (!p.bandwidth.empty()) {
    s += fmt::format("  {:<15} {:<11} {:>12} {:>14} {:>14} {:>12}\n", "collective", "link",
                     "message", "algbw", "busbw", "time");
    for (const auto& b : p.bandwidth)
      s += fmt::format(
          "  {:<15} {:<11} {:>12} {:>9.3f} GB/s {:>9.3f} GB/s {:>12}\n", b.op, b.link,
          base::format_bytes(b.bytes), b.algbw_gbps, b.busbw_gbps,
          base::format_duration(b.algbw_gbps > 0 ? double(b.bytes) / (b.algbw_gbps * 1e9) : 0.0));
    s += "  alpha-beta fit (t = alpha x ring steps + bytes x bus factor / busbw):\n";
    for (const auto& f : fit_alpha_beta(p.bandwidth, p.world_size))
      s += fmt::format(
          "  {:<15} {:<11} alpha {:>10} per step, busbw {:>9.3f} GB/s, worst residual {:.0f} %\n",
          f.op, f.link, base::format_duration(f.alpha_s), f.busbw_bytes_per_s / 1e9,
          100 * f.max_rel_error);
  }
  return s;
}

}  // namespace hybrid::autotune
