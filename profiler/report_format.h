// Text building blocks of the reports: numbers with units and aligned tables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.h"

namespace hybrid::profiler::report {

// Numbers with units: one format for every tool (base/units.h).
using base::format_bytes;
using base::format_count;
using base::format_flop;
using base::format_flop_rate;
using base::format_gbps;
using base::format_ms;
using base::format_percent;

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
