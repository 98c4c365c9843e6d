// Text building blocks of the reports: numbers with units and aligned tables.
// (engine/util/units.h has similar helpers; the profiler cannot include the engine.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::profiler::report {

std::string format_bytes(uint64_t bytes);         // "1.50 GiB", "512 B"
std::string format_ms(double ms);                 // "12.35 ms", "0.042 ms", "1234.5 ms"
std::string format_flop(double flop);             // "3.70 TFLOP" (a count)
std::string format_flop_rate(double flop_per_s);  // "152.30 TFLOP/s"
std::string format_count(double n);               // "124.44 M", "512"
std::string format_percent(double fraction);      // 0.123 → "12.30%"
std::string format_gbps(double gbps);             // "12.34 GB/s"

// Columns are padded to their widest cell; the first `left_columns` are left-aligned,
// the rest right-aligned (numbers).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers, int left_columns = 1);
  void add_row(std::vector<std::string> cells);  // throws when the cell count differs
  std::string render(std::string_view indent = "") const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  int left_columns_;
};

// "------ title ------" of a fixed width.
std::string section(std::string_view title, int width = 96);

}  // namespace hybrid::profiler::report
