#include "kernels/cpu/gemm_selection.h"

#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "base/atomic_file.h"
#include "base/host.h"
#include "base/json_read.h"
#include "base/statistics.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/openblas.h"

namespace hybrid::kernels::cpu {

namespace {

using nlohmann::json;
constexpr const char* kFormat = "hybrid-gemm-providers";
// Bumped whenever what a provider runs changes (2: OpenBLAS inside the OpenMP pool,
// the avx512bf16 kernel), so choices measured on older code are measured again.
constexpr int kVersion = 2;

// The whole file, or an empty object; a file that is not ours becomes a warning.
json read_cache(const std::filesystem::path& path, std::vector<std::string>& warnings) {
  std::ifstream in(path);
  if (!in) return json::object();  // no cache yet
  std::stringstream text;
  text << in.rdbuf();
  const auto ignore = [&](const std::string& why) {
    warnings.push_back("gemm: ignoring the provider cache " + path.string() + " (" + why +
                       "); measuring again");
    return json::object();
  };
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) return ignore("not valid JSON");
  if (!j.is_object() || j.value("format", "") != kFormat || !j.contains("machines") ||
      !j["machines"].is_object())
    return ignore("not a " + std::string(kFormat) + " file");
  if (j.value("version", 0) != kVersion)
    return ignore("version " + j.value("version", json(0)).dump() + ", expected " +
                  std::to_string(kVersion));
  return j;
}

// The cached choice of one shape, when the entry is complete and its provider is known.
std::optional<GemmChoice> cached_choice(const json& entry, const GemmShape& shape) {
  if (!entry.is_object() || !entry.contains("provider") || !entry["provider"].is_string())
    return std::nullopt;
  const auto p = parse_provider(entry["provider"].get<std::string>());
  if (!p || !provider_available(*p) || !provider_supports(*p, shape.dt)) return std::nullopt;
  GemmChoice c{shape, *p, {}, true};
  if (entry.contains("gflops") && entry["gflops"].is_object())
    for (const auto& [name, rate] : entry["gflops"].items())
      if (auto q = parse_provider(name); q && rate.is_number())
        c.gflops.emplace_back(*q, rate.get<double>());
  return c;
}

GemmChoice measure_choice(const GemmShape& shape) {
  GemmChoice c{shape, GemmProvider::onednn, {}, false};
  double best = -1;
  for (GemmProvider p : usable_gemm_providers(shape.dt)) {
    const double rate = measure_gemm(p, shape);
    c.gflops.emplace_back(p, rate);
    if (rate > best) best = rate, c.provider = p;
  }
  return c;
}

json to_json(const GemmChoice& c) {
  json rates = json::object();
  for (const auto& [p, r] : c.gflops) rates[std::string(provider_name(p))] = r;
  return {{"provider", provider_name(c.provider)}, {"gflops", rates}};
}

}  // namespace

std::filesystem::path default_gemm_cache_path() {
  const char* dir = std::getenv("HYBRID_CACHE_DIR");
  if (dir && *dir) return std::filesystem::path(dir) / "gemm-providers.json";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::filesystem::path(xdg) / "hybrid" / "gemm-providers.json";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "hybrid" /
         "gemm-providers.json";
}

std::string gemm_machine_key() {
  const base::CpuInfo cpu = base::read_cpu_info();
  std::string flags;
  for (const std::string& f : cpu.flags) flags += (flags.empty() ? "" : " ") + f;
  const openblas::Library& lib = openblas::library();
  return (cpu.model.empty() ? "unknown CPU" : cpu.model) + " | " + flags + " | " +
         std::to_string(omp_get_max_threads()) + " threads | openblas " +
         (lib.loaded ? lib.core : "none");
}

double measure_gemm(GemmProvider p, const GemmShape& s, int min_calls, double min_seconds) {
  const int a_elems = s.M * s.K, b_elems = s.K * s.N;
  const size_t esize = dtype_size(s.dt);
  std::vector<char> a(size_t(a_elems) * esize), b(size_t(b_elems) * esize),
      c(size_t(s.M) * s.N * esize);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  dispatch_dtype(s.dt, [&](auto tag) {
    using T = decltype(tag);
    for (int i = 0; i < a_elems; ++i) reinterpret_cast<T*>(a.data())[i] = store<T>(u(rng));
    for (int i = 0; i < b_elems; ++i) reinterpret_cast<T*>(b.data())[i] = store<T>(u(rng));
  });
  const int lda = s.trans_a ? s.M : s.K, ldb = s.trans_b ? s.K : s.N;
  const auto call = [&] {
    gemm_on(p, s.dt, s.trans_a, s.trans_b, s.M, s.N, s.K, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
            c.data(), s.N);
  };
  call();  // warm-up: primitive creation, OpenBLAS's thread start, page faults
  std::vector<double> seconds;
  double total = 0;
  while (int(seconds.size()) < min_calls || total < min_seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    total += seconds.back();
  }
  return 2.0 * s.M * s.N * s.K / base::median(seconds) / 1e9;
}

GemmSelection select_gemm_providers(const std::vector<GemmShape>& shapes,
                                    const std::filesystem::path& cache_path) {
  GemmSelection sel;
  sel.machine = gemm_machine_key();
  sel.cache_path = cache_path.string();
  std::string why;
  if (!provider_available(GemmProvider::openblas, &why))
    sel.warnings.push_back("gemm: OpenBLAS is not a candidate: " + why);
  const json cache = cache_path.empty() ? json::object() : read_cache(cache_path, sel.warnings);
  const json* mine = base::at_path(cache, {"machines", sel.machine});
  json measured = json::object();
  for (const GemmShape& shape : shapes) {
    const std::string key = shape.str();
    std::optional<GemmChoice> c;
    if (mine && mine->is_object() && mine->contains(key)) c = cached_choice(mine->at(key), shape);
    if (!c) {
      c = measure_choice(shape);
      measured[key] = to_json(*c);
      ++sel.measured;
    }
    route_gemm(shape, c->provider);
    sel.choices.push_back(std::move(*c));
  }
  if (!cache_path.empty() && sel.measured > 0) {
    // Merged into the file as it is now: another process may have added entries.
    std::vector<std::string> ignored;
    json latest = read_cache(cache_path, ignored);
    latest["format"] = kFormat;
    latest["version"] = kVersion;
    json& entries = latest["machines"][sel.machine];
    if (!entries.is_object()) entries = json::object();
    entries.update(measured);
    try {
      base::write_file_atomic(cache_path, latest.dump(1) + "\n");
    } catch (const base::FileError& e) {
      sel.warnings.push_back(std::string("gemm: the provider cache was not written: ") + e.what());
    }
  }
  return sel;
}

}  // namespace hybrid::kernels::cpu
