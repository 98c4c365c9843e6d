// tokenizer.json files the byte-level BPE refuses, each with a DataFileError
// that names the file and what is wrong: another model type, a normalizer, a
// bad merges entry, a missing file, malformed JSON, an unsupported split.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "engine/data/data_file_error.h"
#include "engine/data/tokenizer/pcre2_pattern.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "tests/common/error_of.h"
#include "tests/common/temp_dir.h"

namespace {

using namespace hybrid::engine;
using hybrid::test::error_of;
using nlohmann::json;

const std::string kGpt2 =
    std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/tokenizer/gpt2_style.json";

json gpt2_json() {
  std::ifstream in(kGpt2);
  return json::parse(in);
}

// The message of loading the GPT-2 tokenizer after `edit`.
std::string refusal(const std::function<void(json&)>& edit) {
  hybrid::test::TempDir dir;
  json j = gpt2_json();
  edit(j);
  const std::string path = dir / "tokenizer.json";
  std::ofstream(path) << j.dump();
  const std::string msg = error_of<DataFileError>([&] { load_byte_level_bpe(path); }, "no error");
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "names the file: " << msg;
  return msg;
}

TEST(ByteLevelBpeErrors, OtherModelTypesAreNamed) {
  for (const std::string type : {"WordPiece", "Unigram"})
    EXPECT_NE(refusal([&](json& j) { j["model"]["type"] = type; }).find("model.type " + type),
              std::string::npos);
}

TEST(ByteLevelBpeErrors, NormalizerIsNamed) {
  const std::string msg = refusal([](json& j) { j["normalizer"] = {{"type", "NFC"}}; });
  EXPECT_NE(msg.find("normalizer NFC is not supported"), std::string::npos) << msg;
}

TEST(ByteLevelBpeErrors, BadMergesEntriesAreNamed) {
  std::string msg = refusal([](json& j) { j["model"]["merges"][3] = "nospace"; });
  EXPECT_NE(msg.find("model.merges[3] \"nospace\" must be two tokens"), std::string::npos) << msg;
  msg = refusal([](json& j) { j["model"]["merges"][5] = "e zzzq"; });
  EXPECT_NE(msg.find("model.merges[5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"zzzq\" is not in model.vocab"), std::string::npos) << msg;
  msg = refusal([](json& j) { j["model"]["merges"][0] = json::array({"e", 1}); });
  EXPECT_NE(msg.find("model.merges[0]"), std::string::npos) << msg;
}

TEST(ByteLevelBpeErrors, UnsupportedSettingsAreNamed) {
  EXPECT_NE(refusal([](json& j) { j["model"]["dropout"] = 0.1; }).find("model.dropout 0.1"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["model"]["continuing_subword_prefix"] = "##";
            }).find("model.continuing_subword_prefix \"##\""),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["pre_tokenizer"] = {{"type", "Whitespace"}};
            }).find("pre_tokenizer.type Whitespace"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["decoder"] = {{"type", "WordPiece"}};
            }).find("decoder WordPiece"),
            std::string::npos);
  const json split = {{"type", "Split"},
                      {"pattern", {{"Regex", "\\s+"}}},
                      {"behavior", "Removed"},
                      {"invert", false}};
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  const std::string msg = refusal([&](json& j) {
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}};
  });
  EXPECT_NE(msg.find("pre_tokenizer.pretokenizers[0].behavior \"Removed\""), std::string::npos)
      << msg;
  EXPECT_NE(refusal([&](json& j) {
              json bad = split;
              bad["behavior"] = "Isolated";
              bad["pattern"]["Regex"] = "(unclosed";
              j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {bad, byte_level}}};
            }).find("(unclosed"),
            std::string::npos);
  EXPECT_NE(
      refusal([](json& j) { j["added_tokens"][0]["id"] = "zero"; }).find("added_tokens[0].id"),
      std::string::npos);
}

// Values of the wrong type or far out of range: named, never a JSON library
// exception or a table of two billion entries.
TEST(ByteLevelBpeErrors, WrongTypesAndSparseIdsAreNamed) {
  std::string msg = refusal([](json& j) { j["model"]["vocab"]["e"] = 2000000000; });
  EXPECT_NE(msg.find("model.vocab[\"e\"]"), std::string::npos) << msg;
  msg = refusal([](json& j) { j["added_tokens"][0]["id"] = 99999999; });
  EXPECT_NE(msg.find("added_tokens[0].id"), std::string::npos) << msg;
  msg = refusal([](json& j) { j["model"]["merges"] = {{"a", "b"}}; });
  EXPECT_NE(msg.find("model.merges must be an array"), std::string::npos) << msg;
  msg = refusal([](json& j) { j["added_tokens"] = 5; });
  EXPECT_NE(msg.find("added_tokens must be an array"), std::string::npos) << msg;
  msg = refusal([](json& j) { j["model"]["vocab"] = json::array(); });
  EXPECT_NE(msg.find("model.vocab must be a non-empty object"), std::string::npos) << msg;
  msg = refusal([](json& j) { j["added_tokens"][0]["lstrip"] = "yes"; });
  EXPECT_NE(msg.find("added_tokens[0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lstrip"), std::string::npos) << msg;
}

TEST(ByteLevelBpeErrors, MissingFileAndMalformedJson) {
  hybrid::test::TempDir dir;
  const std::string missing = dir / "absent.json";
  std::string msg = error_of<DataFileError>([&] { load_byte_level_bpe(missing); }, "no error");
  EXPECT_EQ(msg.rfind(missing + ": cannot open", 0), 0u) << msg;
  const std::string broken = dir / "broken.json";
  std::ofstream(broken) << "{\"model\": {\"type\": \"BPE\",\n \"vocab\": {\"a\": 0,}}";
  msg = error_of<DataFileError>([&] { load_byte_level_bpe(broken); }, "no error");
  EXPECT_EQ(msg.rfind(broken + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  const std::string not_tokenizer = dir / "list.json";
  std::ofstream(not_tokenizer) << "[1, 2]";
  msg = error_of<DataFileError>([&] { load_byte_level_bpe(not_tokenizer); }, "no error");
  EXPECT_NE(msg.find("no \"model\" object"), std::string::npos) << msg;
}

// Oniguruma's \s (Unicode White_Space, NEL included) is not PCRE2's: rewritten.
TEST(ByteLevelBpeErrors, OnigurumaWhitespaceIsRewritten) {
  EXPECT_EQ(oniguruma_to_pcre2(R"(\s+(?!\S)|[^\s\p{L}]|\\s)"),
            R"(\p{White_Space}+(?!\P{White_Space})|[^\p{White_Space}\p{L}]|\\s)");
  const Pcre2Pattern space(R"(\s)", Pcre2Pattern::Syntax::oniguruma);
  EXPECT_TRUE(space.matches_at_start("\xC2\x85"));  // U+0085 NEXT LINE
  EXPECT_TRUE(space.matches_at_start("\xE2\x80\xA8"));
  EXPECT_FALSE(space.matches_at_start("x"));
}

}  // namespace
