#include "base/units.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

namespace hybrid::base {

namespace {

// Scales by 1000 until the value is below 1000: "3.70 T" + unit.
std::string si(double v, std::string_view unit) {
  static const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  if (!std::isfinite(v)) return fmt::format("{} {}", v, unit);
  int p = 0;
  double a = std::fabs(v);
  while (a >= 1000.0 && p < 6) {
    a /= 1000.0;
    v /= 1000.0;
    ++p;
  }
  return fmt::format("{:.2f} {}{}", v, prefixes[p], unit);
}

}  // namespace

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string format_ms(double ms) {
  const double a = std::fabs(ms);
  if (!std::isfinite(ms)) return fmt::format("{} ms", ms);
  if (a >= 100.0) return fmt::format("{:.1f} ms", ms);
  if (a >= 1.0) return fmt::format("{:.2f} ms", ms);
  return fmt::format("{:.3f} ms", ms);
}

std::string format_duration(double s) {
  if (!std::isfinite(s)) return fmt::format("{} s", s);
  if (s < 1e-3) return fmt::format("{:.1f} µs", s * 1e6);
  if (s < 1.0) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 60.0) return fmt::format("{:.2f} s", s);
  const long total = std::lround(s);
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, total % 60);
  return fmt::format("{}h{:02d}m", total / 3600, (total % 3600) / 60);
}

std::string format_flop(double flop) { return si(flop, "FLOP"); }
std::string format_flop_rate(double flop_per_s) { return si(flop_per_s, "FLOP/s"); }

std::string format_count(double n) {
  if (std::fabs(n) < 1000.0) return fmt::format("{:.0f}", n);
  return si(n, "");
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return fmt::format("{:.2f}%", 100.0 * fraction);
}

std::string format_gbps(double gbps) { return fmt::format("{:.2f} GB/s", gbps); }

}  // namespace hybrid::base
