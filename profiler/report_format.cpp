#include "profiler/report_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hybrid::profiler::report {

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

std::string format_flop(double flop) { return si(flop, "FLOP"); }
std::string format_flop_rate(double flop_per_s) { return si(flop_per_s, "FLOP/s"); }

std::string format_count(double n) {
  if (std::fabs(n) < 1000.0) return fmt::format("{:.0f}", n);
  return si(n, "");  // "124.44 M"
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return fmt::format("{:.2f}%", 100.0 * fraction);
}

std::string format_gbps(double gbps) { return fmt::format("{:.2f} GB/s", gbps); }

TextTable::TextTable(std::vector<std::string> headers, int left_columns)
    : headers_(std::move(headers)), left_columns_(left_columns) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size())
    throw std::invalid_argument(fmt::format("TextTable: row has {} cells, the table {} columns",
                                            cells.size(), headers_.size()));
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(std::string_view indent) const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& r : rows_) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s(indent);
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) s += "  ";
      const std::string pad(width[c] - cells[c].size(), ' ');
      s += int(c) < left_columns_ ? cells[c] + pad : pad + cells[c];
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(headers_);
  size_t total = 0;
  for (size_t w : width) total += w;
  out += std::string(indent) + std::string(total + 2 * (width.size() - 1), '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string section(std::string_view title, int width) {
  const int inner = int(title.size()) + 2;
  const int left = std::max(3, (width - inner) / 2);
  const int right = std::max(3, width - inner - left);
  return std::string(size_t(left), '-') + " " + std::string(title) + " " +
         std::string(size_t(right), '-') + "\n";
}

}  // namespace hybrid::profiler::report
