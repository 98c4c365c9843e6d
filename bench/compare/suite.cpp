#include "bench/compare/suite.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "bench/compare/benchmark_file.h"

namespace hybrid::bench {

namespace {

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error(fmt::format("{}: {} {}", source_, key, what));
  }

  void only_keys(const nlohmann::json& object, const std::string& key,
                 const std::set<std::string>& allowed) const {
    for (const auto& [k, v] : object.items()) {
      if (!allowed.count(k)) {
        fail(key + "." + k,
             fmt::format("is not a known key (known: {})", fmt::join(allowed, ", ")));
      }
    }
  }

  double positive_number(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_number() || !(v.get<double>() > 0)) {
      fail(key, fmt::format("must be a positive number, got {}", v.dump()));
    }
    return v.get<double>();
  }

  int integer(const nlohmann::json& v, const std::string& key, int min) const {
    if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > 1000000) {
      fail(key, fmt::format("must be an integer >= {}, got {}", min, v.dump()));
    }
    return v.get<int>();
  }

  std::string string(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_string() || v.get<std::string>().empty()) {
      fail(key, fmt::format("must be a non-empty string, got {}", v.dump()));
    }
    return v.get<std::string>();
  }

  SuiteEntry entry(const nlohmann::json& e, const std::string& key) const {
    if (!e.is_object()) fail(key, "must be an object");
    only_keys(e, key,
              {"executable", "filter", "min_time", "repetitions", "mpirun_np", "interleave",
               "min_warmup_time", "timeout_s", "args", "env", "comment"});
    SuiteEntry out;
    if (!e.contains("executable")) fail(key + ".executable", "is missing");
    out.executable = string(e["executable"], key + ".executable");
    if (e.contains("filter")) out.filter = string(e["filter"], key + ".filter");
    if (e.contains("min_time")) out.min_time_s = positive_number(e["min_time"], key + ".min_time");
    if (e.contains("repetitions"))
      out.repetitions = integer(e["repetitions"], key + ".repetitions", 2);
    if (e.contains("mpirun_np")) out.mpirun_np = integer(e["mpirun_np"], key + ".mpirun_np", 1);
    // Interleaving shuffles per process: ranks under mpirun would run different benchmarks.
    out.interleave = out.mpirun_np == 0;
    if (e.contains("interleave")) {
      if (!e["interleave"].is_boolean()) fail(key + ".interleave", "must be true or false");
      out.interleave = e["interleave"].get<bool>();
    }
    if (e.contains("min_warmup_time")) {
      out.min_warmup_time_s = positive_number(e["min_warmup_time"], key + ".min_warmup_time");
    }
    if (e.contains("timeout_s"))
      out.timeout_s = positive_number(e["timeout_s"], key + ".timeout_s");
    if (e.contains("args")) {
      if (!e["args"].is_array()) fail(key + ".args", "must be an array of strings");
      for (std::size_t i = 0; i < e["args"].size(); ++i) {
        out.args.push_back(string(e["args"][i], fmt::format("{}.args[{}]", key, i)));
      }
    }
    if (e.contains("env")) {
      if (!e["env"].is_object()) fail(key + ".env", "must be an object of strings");
      for (const auto& [name, value] : e["env"].items()) {
        if (name.empty() || name.find('=') != std::string::npos) {
          fail(key + ".env", fmt::format("has an invalid variable name '{}'", name));
        }
        out.env.emplace_back(name, string(value, key + ".env." + name));
      }
    }
    return out;
  }

 private:
  std::string source_;
};

}  // namespace

std::map<std::string, Suite> parse_suites(const nlohmann::json& doc, const std::string& source) {
  Reader reader(source);
  if (!doc.is_object() || !doc.contains("suites") || !doc["suites"].is_object()) {
    reader.fail("suites", "is missing (expected {\"suites\": {NAME: {\"entries\": [...]}}})");
  }
  std::map<std::string, Suite> suites;
  for (const auto& [name, s] : doc["suites"].items()) {
    const std::string key = "suites." + name;
    if (!s.is_object()) reader.fail(key, "must be an object");
    reader.only_keys(s, key, {"description", "repetitions", "metric", "entries", "comment"});
    Suite suite;
    suite.name = name;
    if (s.contains("description")) {
      if (!s["description"].is_string()) reader.fail(key + ".description", "must be a string");
      suite.description = s["description"].get<std::string>();
    }
    if (s.contains("repetitions"))
      suite.repetitions = reader.integer(s["repetitions"], key + ".repetitions", 2);
    if (s.contains("metric")) {
      suite.metric = reader.string(s["metric"], key + ".metric");
      if (suite.metric != "real_time" && suite.metric != "cpu_time") {
        reader.fail(key + ".metric",
                    fmt::format("must be real_time or cpu_time, got '{}'", suite.metric));
      }
    }
    if (!s.contains("entries") || !s["entries"].is_array() || s["entries"].empty()) {
      reader.fail(key + ".entries", "must be a non-empty array");
    }
    for (std::size_t i = 0; i < s["entries"].size(); ++i) {
      suite.entries.push_back(reader.entry(s["entries"][i], fmt::format("{}.entries[{}]", key, i)));
    }
    suites.emplace(name, std::move(suite));
  }
  return suites;
}

std::map<std::string, Suite> load_suites(const std::filesystem::path& path) {
  return parse_suites(read_json_file(path), path.string());
}

const Suite& find_suite(const std::map<std::string, Suite>& suites, const std::string& name,
                        const std::string& source) {
  auto it = suites.find(name);
  if (it == suites.end()) {
    std::vector<std::string> names;
    for (const auto& [n, s] : suites) names.push_back(n);
    throw std::runtime_error(
        fmt::format("{}: no suite named '{}' (suites: {})", source, name, fmt::join(names, ", ")));
  }
  return it->second;
}

}  // namespace hybrid::bench
