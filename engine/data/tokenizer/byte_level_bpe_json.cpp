// load_byte_level_bpe: tokenizer.json (Hugging Face tokenizers' format) read
// into a ByteLevelBpeSpec. What GPT-2- and Llama-3-style files hold is read;
// anything that would change the encoding and that hybrid does not implement
// (another model type, a normalizer, dropout, word prefixes or suffixes,
// another split behaviour) is a DataFileError naming the key and its value.
#include <fstream>
#include <sstream>

#include "base/json_read.h"
#include "base/json_text.h"
#include "engine/data/data_file_error.h"
#include "engine/data/tokenizer/byte_level_alphabet.h"
#include "engine/data/tokenizer/byte_level_bpe.h"

namespace hybrid::engine {
namespace {

using nlohmann::json;

// GPT-2's split pattern: ByteLevel's own when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataFileError(path + ": " + what);
}

std::string type_of(const json& j) {
  const json* t = base::at_path(j, {"type"});
  return t != nullptr && t->is_string() ? t->get<std::string>() : base::describe_json(j);
}

bool flag(const json& object, const char* key, bool fallback, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return base::json_boolean(*it, where, key);
}

const json& array_at(const json& object, const char* key, const std::string& path,
                     const std::string& where) {
  static const json empty = json::array();
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return empty;
  if (!it->is_array()) fail(path, where + " must be an array, got " + base::describe_json(*it));
  return *it;
}

void read_byte_level(const json& j, bool after_split, ByteLevelBpeSpec& spec,
                     const std::string& path, const std::string& key) {
  spec.add_prefix_space = flag(j, "add_prefix_space", true, path + ": " + key);
  if (spec.add_prefix_space && after_split)
    fail(path, key + ".add_prefix_space true after a Split is not supported");
  if (flag(j, "use_regex", true, path + ": " + key)) {
    spec.split_patterns.push_back(kGpt2Pattern);
    spec.split_literal.push_back(false);
  }
}

void read_split(const json& j, ByteLevelBpeSpec& spec, const std::string& path,
                const std::string& key) {
  const json* b = base::at_path(j, {"behavior"});
  const std::string behavior = b != nullptr && b->is_string() ? b->get<std::string>() : "";
  if (behavior != "Isolated")
    fail(path, key + ".behavior \"" + behavior + "\" is not supported (only \"Isolated\")");
  if (flag(j, "invert", false, path + ": " + key))
    fail(path, key + ".invert true is not supported");
  const json* regex = base::at_path(j, {"pattern", "Regex"});
  const json* literal = base::at_path(j, {"pattern", "String"});
  const json* pattern = regex != nullptr ? regex : literal;
  if (pattern == nullptr || !pattern->is_string())
    fail(path, key + ".pattern must be {\"Regex\": ...} or {\"String\": ...}");
  spec.split_patterns.push_back(pattern->get<std::string>());
  spec.split_literal.push_back(regex == nullptr);
}

void read_pre_tokenizer(const json& root, ByteLevelBpeSpec& spec, const std::string& path) {
  const json* pre = base::at_path(root, {"pre_tokenizer"});
  if (pre == nullptr || pre->is_null())
    fail(path, "pre_tokenizer is null: a byte-level BPE needs a ByteLevel pre-tokenizer");
  const std::string type = type_of(*pre);
  if (type == "ByteLevel") return read_byte_level(*pre, false, spec, path, "pre_tokenizer");
  if (type != "Sequence")
    fail(path, "pre_tokenizer.type " + type +
                   " is not supported (ByteLevel, or a Sequence of "
                   "Split and ByteLevel)");
  const json& steps = array_at(*pre, "pretokenizers", path, "pre_tokenizer.pretokenizers");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string key = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
    const std::string step = type_of(steps[i]);
    if (step == "Split" && i + 1 < steps.size()) {
      read_split(steps[i], spec, path, key);
    } else if (step == "ByteLevel" && i + 1 == steps.size()) {
      read_byte_level(steps[i], i > 0, spec, path, key);
    } else {
      fail(path,
           key + ".type " + step + " is not supported here (Splits, then one ByteLevel last)");
    }
  }
  if (steps.empty() || type_of(steps.back()) != "ByteLevel")
    fail(path, "pre_tokenizer: a Sequence must end with ByteLevel");
}

void check_supported(const json& root, const std::string& path) {
  const json* normalizer = base::at_path(root, {"normalizer"});
  if (normalizer != nullptr && !normalizer->is_null())
    fail(path, "normalizer " + type_of(*normalizer) +
                   " is not supported (byte-level BPE here has no normalizer)");
  const json* decoder = base::at_path(root, {"decoder"});
  if (decoder == nullptr || type_of(*decoder) != "ByteLevel")
    fail(path, "decoder " + (decoder ? type_of(*decoder) : std::string("(none)")) +
                   " is not supported (ByteLevel)");
  const json& model = root.at("model");
  const std::string type = type_of(model);
  if (type != "BPE") fail(path, "model.type " + type + " is not supported (only BPE, byte-level)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = model.find(key);
    if (it != model.end() && !it->is_null() && *it != "")
      fail(path,
           std::string("model.") + key + " " + base::describe_json(*it) + " is not supported");
  }
  if (const auto it = model.find("dropout"); it != model.end() && !it->is_null())
    fail(path, "model.dropout " + base::describe_json(*it) + " is not supported (deterministic)");
  if (flag(model, "byte_fallback", false, path + ": model"))
    fail(path, "model.byte_fallback true is not supported (byte-level BPE needs none)");
}

// Ids are dense in every real file (GPT-2: 0..50256, Llama 3: 0..128255); an id
// far beyond the number of tokens is a broken file, and would cost a table
// entry per id below it.
int32_t read_id(const json& id, size_t tokens, const std::string& path, const std::string& key) {
  const int64_t limit = 2 * int64_t(tokens) + 256;
  return int32_t(base::json_integer(id, path, key + " (ids are below twice the number of tokens)",
                                    0, limit - 1));
}

void set_token(ByteLevelBpeSpec& spec, int32_t id, const std::string& text) {
  if (size_t(id) >= spec.token_bytes.size()) {
    spec.token_bytes.resize(size_t(id) + 1);
    spec.has_token.resize(size_t(id) + 1, false);
  }
  // The ByteLevel decoder: a token's characters as bytes, or its text as it is
  // when one character is not in the alphabet.
  spec.token_bytes[size_t(id)] = byte_level_bytes(text).value_or(text);
  spec.has_token[size_t(id)] = true;
}

void read_merges(const json& model, const std::unordered_map<std::string, int32_t>& vocab,
                 ByteLevelBpeSpec& spec, const std::string& path) {
  const json& merges = array_at(model, "merges", path, "model.merges");
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    const std::string key = "model.merges[" + std::to_string(rank) + "] " + base::describe_json(m);
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        fail(path, key + " must be two tokens separated by one space");
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      fail(path, key + " must be \"a b\" or [\"a\", \"b\"]");
    }
    const auto l = vocab.find(left), r = vocab.find(right), merged = vocab.find(left + right);
    const std::pair<decltype(l), std::string> parts[] = {
        {l, left}, {r, right}, {merged, left + right}};
    for (const auto& part : parts)
      if (part.first == vocab.end())
        fail(path, key + ": token \"" + part.second + "\" is not in model.vocab");
    spec.merges->add(l->second, r->second, int32_t(rank), merged->second);
  }
}

void read_model(const json& model, size_t tokens, ByteLevelBpeSpec& spec, const std::string& path) {
  std::unordered_map<std::string, int32_t> vocab;
  const auto vit = model.find("vocab");
  if (vit == model.end() || !vit->is_object() || vit->empty())
    fail(path, "model.vocab must be a non-empty object");
  const json& v = *vit;
  for (const auto& [token, id] : v.items()) {
    const int32_t n = read_id(id, tokens, path, "model.vocab[\"" + token + "\"]");
    vocab.emplace(token, n);
    set_token(spec, n, token);
    if (spec.ignore_merges) spec.word_ids.emplace(spec.token_bytes[size_t(n)], n);
  }
  spec.byte_ids.fill(-1);
  for (int b = 0; b < 256; ++b)
    if (const auto it = vocab.find(byte_level_char(static_cast<unsigned char>(b)));
        it != vocab.end())
      spec.byte_ids[size_t(b)] = it->second;
  if (const auto it = model.find("unk_token"); it != model.end() && !it->is_null()) {
    const auto u = vocab.find(base::json_string(*it, path, "model.unk_token"));
    if (u == vocab.end()) fail(path, "model.unk_token " + it->dump() + " is not in model.vocab");
    spec.unk = u->second;
  }
  spec.fuse_unk = flag(model, "fuse_unk", false, path + ": model");
  spec.merges = std::make_unique<BpeMerges>(spec.byte_ids, spec.unk, spec.fuse_unk);
  read_merges(model, vocab, spec, path);
  spec.token_ids = std::move(vocab);
}

void read_added_tokens(const json& root, size_t tokens, ByteLevelBpeSpec& spec,
                       const std::string& path) {
  const json& added = array_at(root, "added_tokens", path, "added_tokens");
  for (size_t i = 0; i < added.size(); ++i) {
    const std::string key = "added_tokens[" + std::to_string(i) + "]";
    const json& a = added[i];
    if (!a.is_object()) fail(path, key + " must be an object");
    AddedToken t;
    t.id = read_id(a.contains("id") ? a.at("id") : json(), tokens, path, key + ".id");
    t.content =
        base::json_string(a.contains("content") ? a.at("content") : json(), path, key + ".content");
    t.special = flag(a, "special", false, path + ": " + key);
    t.single_word = flag(a, "single_word", false, path + ": " + key);
    t.lstrip = flag(a, "lstrip", false, path + ": " + key);
    t.rstrip = flag(a, "rstrip", false, path + ": " + key);
    t.normalized = flag(a, "normalized", !t.special, path + ": " + key);
    set_token(spec, t.id, t.content);
    spec.token_ids[t.content] = t.id;  // an added token comes first, as in Hugging Face
    spec.added_tokens.push_back(std::move(t));
  }
}

json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the tokenizer file");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return base::parse_json_text(text.str());
  } catch (const base::JsonTextError& e) {
    fail(path, e.what());
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_byte_level_bpe(const std::string& tokenizer_json) {
  const std::string& path = tokenizer_json;
  const json root = read_json(path);
  if (!root.is_object() || !root.contains("model") || !root.at("model").is_object())
    fail(path, "not a tokenizer.json: no \"model\" object");
  ByteLevelBpeSpec spec;
  try {
    check_supported(root, path);
    read_pre_tokenizer(root, spec, path);
    spec.ignore_merges = flag(root.at("model"), "ignore_merges", false, path + ": model");
    const json& model = root.at("model");
    const json& added = array_at(root, "added_tokens", path, "added_tokens");
    const size_t tokens = (model.contains("vocab") ? model.at("vocab").size() : 0) + added.size();
    read_model(model, tokens, spec, path);
    read_added_tokens(root, tokens, spec, path);
  } catch (const base::JsonReadError& e) {
    throw DataFileError(e.what());
  } catch (const nlohmann::json::exception& e) {
    // A value of an unexpected type somewhere not checked above.
    fail(path, "unexpected JSON: " + base::json_error_text(e));
  }
  try {
    return std::make_unique<ByteLevelBpe>(std::move(spec));
  } catch (const std::invalid_argument& e) {
    fail(path, std::string("pre_tokenizer: ") + e.what());
  }
}

}  // namespace hybrid::engine
