#include "profiler/report_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hybrid::profiler::report {

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
