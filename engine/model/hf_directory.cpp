#include "engine/model/hf_directory.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "base/json_read.h"
#include "engine/config/config.h"
#include "engine/data/data_file_error.h"
#include "engine/model/families.h"

namespace hybrid::engine {

bool is_hf_directory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) &&
         std::filesystem::is_regular_file(std::filesystem::path(path) / "config.json", ec);
}

ModelConfig read_hf_model_config(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  std::ifstream in(path);
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DataFileError(fmt::format("{}: not JSON: {}", path, base::json_error_text(e)));
  }
  std::string arch;
  if (c.is_object() && c.contains("architectures") && c["architectures"].is_array() &&
      !c["architectures"].empty() && c["architectures"][0].is_string())
    arch = c["architectures"][0].get<std::string>();
  else if (c.is_object() && c.contains("model_type") && c["model_type"].is_string())
    arch = c["model_type"].get<std::string>();
  std::string known;
  for (const FamilyInfo& f : families()) {
    for (const std::string& a : f.hf_architectures)
      if (arch == a) return f.from_hf(c, path);
    known += (known.empty() ? "" : ", ") + f.hf_architectures.front();
  }
  throw DataFileError(fmt::format("{}: architecture '{}' is not one hybrid trains (known: {})",
                                  path, arch.empty() ? "(none given)" : arch, known));
}

void check_model_agrees(const nlohmann::json& given, const ModelConfig& d, const std::string& dir) {
  const std::pair<const char*, std::string> ours[] = {{"type", d.type},
                                                      {"n_layer", std::to_string(d.n_layer)},
                                                      {"n_embd", std::to_string(d.n_embd)},
                                                      {"n_head", std::to_string(d.n_head)},
                                                      {"vocab_size", std::to_string(d.vocab_size)},
                                                      {"seq_len", std::to_string(d.seq_len)}};
  for (const auto& [key, value] : ours) {
    if (!given.contains(key)) continue;
    const auto& v = given[key];
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    if (text != value)
      throw ConfigError(fmt::format(
          "config: hybrid.model.{} is {}, but {}/config.json (hybrid.init_from) says {}", key, text,
          dir, value));
  }
}

}  // namespace hybrid::engine
