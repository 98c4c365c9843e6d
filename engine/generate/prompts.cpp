#include "engine/generate/prompts.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/text.h"
#include "engine/data/data_file_error.h"

namespace hybrid::engine {

std::vector<int> parse_token_list(const std::string& text) {
  std::vector<int> tokens;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view item = base::trim(std::string_view(text).substr(begin, end - begin));
    const auto v = base::parse_double(item);
    if (!v || std::abs(*v) > 2147483647.0 || *v != std::floor(*v))
      throw std::invalid_argument(
          fmt::format("token list \"{}\": \"{}\" is not an integer token id", text, item));
    tokens.push_back(int(*v));
    begin = end + 1;
  }
  return tokens;
}

std::vector<int> encode_prompt(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int> ids;
  if (const auto bos = tokenizer.bos_id()) ids.push_back(*bos);
  const std::vector<int> encoded = tokenizer.encode(text);
  ids.insert(ids.end(), encoded.begin(), encoded.end());
  return ids;
}

namespace {

std::vector<int> prompt_of_line(const std::string& line, const Tokenizer* tokenizer) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("not a JSON object");
  if (j.contains("text") && j.contains("tokens"))
    throw std::invalid_argument("give \"tokens\" or \"text\", not both");
  if (const auto text = j.find("text"); text != j.end()) {
    if (!text->is_string()) throw std::invalid_argument("\"text\" is not a string");
    if (!tokenizer)
      throw std::invalid_argument(
          "a \"text\" prompt needs a tokenizer (tokenizer.json or tokenizer.model), and none "
          "was given");
    return encode_prompt(*tokenizer, text->get<std::string>());
  }
  const auto it = j.find("tokens");
  if (it == j.end() || !it->is_array())
    throw std::invalid_argument("needs \"tokens\" (an array of token ids) or \"text\"");
  std::vector<int> tokens;
  for (const auto& t : *it) {
    if (!t.is_number_integer())
      throw std::invalid_argument(fmt::format("token {} is not an integer", t.dump()));
    tokens.push_back(t.get<int>());
  }
  return tokens;
}

}  // namespace

std::vector<std::vector<int>> read_prompts_file(const std::string& path,
                                                const Tokenizer* tokenizer) {
  std::ifstream in(path);
  if (!in) throw DataFileError(fmt::format("{}: cannot read the prompts file", path));
  std::vector<std::vector<int>> prompts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (base::trim(line).empty()) continue;
    try {
      prompts.push_back(prompt_of_line(line, tokenizer));
    } catch (const std::invalid_argument& e) {
      throw DataFileError(fmt::format("{}:{}: {}", path, number, e.what()));
    }
  }
  if (prompts.empty()) throw DataFileError(fmt::format("{}: no prompts in the file", path));
  return prompts;
}

}  // namespace hybrid::engine
