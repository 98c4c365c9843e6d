#include "engine/model/hf_directory.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "base/json_read.h"
#include "engine/config/config.h"
#include "engine/data/data_file_error.h"
#include "engine/model/families.h"

namespace hybrid::engine {

void throw_bad_hf_key(const std::string& path, const char* key, const nlohmann::json& value) {
  throw DataFileError(fmt::format("{}: \"{}\" is {}", path, key, base::describe_json(value)));
}

void throw_unsupported_hf_key(const std::string& path, const char* key, const std::string& value,
                              const char* family, const std::string& ours) {
  throw DataFileError(
      fmt::format("{}: \"{}\" is {}; hybrid's {} runs {}", path, key, value, family, ours));
}

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
  using nlohmann::json;
  const std::pair<const char*, json> ours[] = {{"type", d.type},
                                               {"n_layer", d.n_layer},
                                               {"n_embd", d.n_embd},
                                               {"n_head", d.n_head},
                                               {"n_kv_head", d.kv_heads()},
                                               {"vocab_size", d.vocab_size},
                                               {"seq_len", d.seq_len},
                                               {"intermediate_size", d.intermediate_size},
                                               {"rope_theta", d.rope_theta},
                                               {"norm_eps", d.norm_eps},
                                               {"tie_embeddings", d.tie_embeddings}};
  auto same = [](const json& a, const json& b) {
    return a.is_number() && b.is_number() ? a.get<double>() == b.get<double>() : a == b;
  };
  for (const auto& [key, value] : ours) {
    if (!given.contains(key)) continue;
    const json& v = given[key];
    // 0 means the family's default, as the parser reads it: n_head key/value
    // heads, GPT-2's 4 × n_embd (which its config.json leaves unset).
    const std::string k = key;
    if ((k == "intermediate_size" || k == "n_kv_head") && (v == 0 || value == 0)) continue;
    if (!same(v, value))
      throw ConfigError(fmt::format(
          "config: hybrid.model.{} is {}, but {}/config.json (hybrid.init_from) says {}", key,
          v.is_string() ? v.get<std::string>() : v.dump(), dir,
          value.is_string() ? value.get<std::string>() : value.dump()));
  }
}

}  // namespace hybrid::engine
