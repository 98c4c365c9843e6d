// JSON files in tests: configs written for the tools, results read back.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace hybrid::test {

inline void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream(path) << j.dump(2);
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace hybrid::test
