// Byte-level BPE (engine/data/tokenizer) against Hugging Face tokenizers 0.15.2
// (the version transformers 4.36.2 brings): two tokenizers that library trained
// on the fortune cookies (a GPT-2 kind and a Llama 3 kind), their encodings of
// that corpus (5.5 MB, read here from Debian's fortunes and fortunes-de) and of
// hand-written hard cases, all written by bench/peers/hf_bpe_reference.py into
// tests/engine/data/tokenizer/bpe_reference.json.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "engine/data/fortune_corpus.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "engine/data/tokenizer/utf8_repair.h"
#include "tests/common/temp_dir.h"
#include "tests/engine/fortune_corpus.h"

namespace {

using namespace hybrid::engine;
using nlohmann::json;

const std::string kData = std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/tokenizer/";
constexpr const char* kRegenerate =
    "the reference was made from Debian's fortunes 1:1.99.1-7.3 and fortunes-de 0.35-1 "
    "(scripts/setup.sh installs them) with Hugging Face tokenizers 0.15.2; with other versions "
    "installed, regenerate it: /work/peers-venv/bin/python bench/peers/hf_bpe_reference.py "
    "tests/engine/data/tokenizer";

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}

const json& reference() {
  static const json ref = read_json(kData + "bpe_reference.json");
  return ref;
}

const Tokenizer& tokenizer(const std::string& name) {
  static const auto gpt2 = load_byte_level_bpe(kData + "gpt2_style.json");
  static const auto llama3 = load_byte_level_bpe(kData + "llama3_style.json");
  return name == "gpt2_style" ? *gpt2 : *llama3;
}

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// As the script hashes a file's encodings: each document's count, then its ids (int32 LE).
uint64_t ids_hash(const std::vector<std::vector<int>>& encodings) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (const auto& ids : encodings) {
    const auto n = int32_t(ids.size());
    h = hybrid::test::fnv1a64(&n, 4, h);
    h = hybrid::test::fnv1a64(std::span<const int>(ids), h);
  }
  return h;
}

std::vector<int> ids_of(const json& j) { return j.get<std::vector<int>>(); }

std::string from_hex(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i += 2) out += char(std::stoi(s.substr(i, 2), nullptr, 16));
  return out;
}

// The corpus, checked against the reference's sizes and hashes first.
const std::vector<FortuneFile>& corpus() {
  static const std::vector<FortuneFile> files = [] {
    const std::string dir = kFortunesDir;
    std::vector<FortuneFile> f;
    try {
      f = read_fortune_files({dir, dir + "/de"});
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << ": the test reads Debian's fortune cookies; " << kRegenerate;
    }
    const json& ref = reference().at("files");
    if (f.size() != ref.size())
      ADD_FAILURE() << "the fortune corpus has " << f.size() << " files, the reference "
                    << ref.size() << ": " << kRegenerate;
    for (size_t i = 0; i < std::min(f.size(), ref.size()); ++i) {
      const uint64_t h = hybrid::test::fnv1a64(f[i].text.data(), f[i].text.size());
      if (f[i].path != ref[i].at("path") || hex(h) != ref[i].at("fnv1a64") ||
          f[i].documents.size() != ref[i].at("documents"))
        ADD_FAILURE() << f[i].path << " (" << f[i].text.size() << " bytes, FNV-1a " << hex(h)
                      << ") is not the reference's " << ref[i].at("path") << " ("
                      << ref[i].at("bytes") << " bytes, " << ref[i].at("fnv1a64")
                      << "): " << kRegenerate;
    }
    return f;
  }();
  return files;
}

class CorpusTest : public ::testing::TestWithParam<std::string> {};

// Every document of every file, encoded on four threads at once (one shared
// tokenizer and word cache): each file's token count and ids hash equal Hugging
// Face's, and each document decodes back to itself.
TEST_P(CorpusTest, EncodesTheFortunesAsHuggingFaceDoes) {
  const std::string name = GetParam();
  const Tokenizer& tok = tokenizer(name);
  const auto& files = corpus();
  ASSERT_FALSE(HasFailure());
  size_t bytes = 0;
  for (const auto& f : files) bytes += f.text.size();
  ASSERT_GE(bytes, size_t(1) << 20) << "at least 1 MB of real text";
  std::vector<std::vector<std::vector<int>>> encoded(files.size());
  std::vector<size_t> round_trip_failures(files.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < files.size(); i += 4)
        for (const std::string& doc : files[i].documents) {
          encoded[i].push_back(tok.encode(doc));
          if (tok.decode(encoded[i].back()) != doc) ++round_trip_failures[i];
        }
    });
  for (auto& th : threads) th.join();
  const json& ref = reference().at("files");
  for (size_t i = 0; i < files.size(); ++i) {
    size_t count = 0;
    for (const auto& ids : encoded[i]) count += ids.size();
    const json& r = ref[i].at(name);
    EXPECT_EQ(count, r.at("tokens").get<size_t>()) << files[i].path;
    EXPECT_EQ(hex(ids_hash(encoded[i])), r.at("ids_fnv1a64").get<std::string>())
        << files[i].path << ": see its documents' ids with bench/peers/hf_bpe_reference.py "
        << "tests/engine/data/tokenizer --dump " << files[i].path;
    EXPECT_EQ(round_trip_failures[i], 0u) << files[i].path << ": decode(encode(x)) != x";
  }
}

INSTANTIATE_TEST_SUITE_P(ByteLevelBpe, CorpusTest, ::testing::Values("gpt2_style", "llama3_style"));

// The GPT-2 tokenizer with ByteLevel's add_prefix_space (RoBERTa's setting).
const Tokenizer& gpt2_prefix_space() {
  static hybrid::test::TempDir dir;
  static const auto tok = [] {
    json j = read_json(kData + "gpt2_style.json");
    j["pre_tokenizer"]["add_prefix_space"] = true;
    std::ofstream(dir / "prefix.json") << j.dump();
    return load_byte_level_bpe(dir / "prefix.json");
  }();
  return *tok;
}

// Whitespace runs, digits, contractions, emoji, CJK, combining marks, NEL and
// other Unicode spaces, special tokens inside text, lstrip / single_word /
// non-special added tokens: the ids, the decoded text and each id decoded on its
// own (a partial UTF-8 sequence gives U+FFFD) equal Hugging Face's.
TEST(ByteLevelBpe, HardCasesEqualHuggingFace) {
  for (const json& c : reference().at("hard_cases")) {
    const std::string text = c.at("text");
    for (const std::string name : {"gpt2_style", "llama3_style", "gpt2_prefix_space"}) {
      const Tokenizer& tok = name == "gpt2_prefix_space" ? gpt2_prefix_space() : tokenizer(name);
      const auto ids = tok.encode(text);
      EXPECT_EQ(ids, ids_of(c.at(name))) << name << ": " << c.at("text").dump();
      // (The long generated runs keep their ids only.)
      EXPECT_EQ(tok.decode(ids), c.value(name + "_decoded", tok.decode(ids))) << name;
      const auto pieces = c.value(name + "_pieces", std::vector<std::string>{});
      for (size_t i = 0; i < std::min(ids.size(), pieces.size()); ++i)
        EXPECT_EQ(tok.decode(std::vector<int>{ids[i]}), pieces[i]) << name << " piece " << i;
      // Round trip, but where <mask>, <rs>, Ωμ (lstrip, rstrip) take the spaces beside
      // them, as in Hugging Face.
      const bool strips = text.find("<mask>") != text.npos || text.find("<rs>") != text.npos ||
                          text.find("Ωμ") != text.npos;
      if (name != "gpt2_prefix_space" && (name != "gpt2_style" || !strips)) {
        EXPECT_EQ(tok.decode(ids), text) << name;
      }
    }
  }
}

// 300 random strings of whitespace kinds, letters, digits, contractions, marks,
// emoji, Unicode spaces and (pieces of) added tokens: ids equal Hugging Face's.
TEST(ByteLevelBpe, RandomStringsEqualHuggingFace) {
  for (const json& c : reference().at("random"))
    for (const std::string name : {"gpt2_style", "llama3_style"})
      EXPECT_EQ(tokenizer(name).encode(c.at("text").get<std::string>()), ids_of(c.at(name)))
          << name << ": " << c.at("text").dump();
}

// Invalid UTF-8: each maximal ill-formed subpart becomes U+FFFD (Python's
// errors="replace"), then the text encodes as Hugging Face encodes the repair.
TEST(ByteLevelBpe, InvalidUtf8IsReplacedAsPythonDoes) {
  for (const json& c : reference().at("invalid_utf8")) {
    const std::string bytes = from_hex(c.at("hex"));
    const std::string replaced = c.at("replaced");
    std::string scratch;
    EXPECT_EQ(std::string(repair_utf8(bytes, scratch)), replaced) << c.at("hex");
    EXPECT_EQ(valid_utf8_prefix(replaced), replaced.size());
    for (const std::string name : {"gpt2_style", "llama3_style"}) {
      const auto ids = tokenizer(name).encode(bytes);
      EXPECT_EQ(ids, ids_of(c.at(name))) << name << " " << c.at("hex");
      EXPECT_EQ(tokenizer(name).decode(ids), replaced) << name;
    }
  }
}

// Random bytes — valid and invalid UTF-8, whitespace, added tokens without
// strips — encode to ids inside the vocabulary that decode to the text as
// Python's errors="replace" repairs it (the documented policy), on both kinds.
TEST(ByteLevelBpe, RandomBytesRoundTripThroughTheRepair) {
  const std::vector<std::string> pieces = {" ",
                                           "   ",
                                           "\t",
                                           "\n",
                                           "\r\n",
                                           "a",
                                           "Zq",
                                           "é",
                                           "日本",
                                           "😀",
                                           "\xCC\x81",
                                           "12",
                                           "'s",
                                           "!?",
                                           "<|endoftext|>",
                                           "<|end_of_text|>",
                                           "<sep>",
                                           "xyzzy",
                                           "<|",
                                           "\xC3",
                                           "\xE2\x82",
                                           "\xF0\x9F",
                                           "\xFF",
                                           "\x80",
                                           "\xED\xA0\x80",
                                           "\xC0\xAF"};
  std::mt19937 rng(42);
  for (int n = 0; n < 2000; ++n) {
    std::string text;
    const int count = int(rng() % 30);
    for (int k = 0; k < count; ++k) {
      if (rng() % 4 == 0)
        text += char(rng() % 256);  // any byte at all
      else
        text += pieces[rng() % pieces.size()];
    }
    std::string repaired;
    const std::string expected(repair_utf8(text, repaired));
    for (const std::string name : {"gpt2_style", "llama3_style"}) {
      const Tokenizer& tok = tokenizer(name);
      const auto ids = tok.encode(text);
      for (const int id : ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size()) << id;
      ASSERT_EQ(tok.decode(ids), expected) << name << ": " << json(expected).dump();
    }
  }
}

// tokenizer.json files of newer libraries write merges as pairs: the same encodings.
TEST(ByteLevelBpe, MergesAsPairsEncodeTheSame) {
  hybrid::test::TempDir dir;
  json j = read_json(kData + "llama3_style.json");
  for (json& m : j["model"]["merges"]) {
    const std::string s = m;
    m = json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  std::ofstream(dir / "pairs.json") << j.dump();
  const auto tok = load_byte_level_bpe(dir / "pairs.json");
  for (const json& c : reference().at("hard_cases"))
    EXPECT_EQ(tok->encode(c.at("text").get<std::string>()), ids_of(c.at("llama3_style")));
}

// The end-of-text and beginning-of-text tokens each kind names, and the size.
TEST(ByteLevelBpe, SpecialTokensAndVocabularySize) {
  const Tokenizer& gpt2 = tokenizer("gpt2_style");
  EXPECT_EQ(gpt2.eos_id(), gpt2.token_id("<|endoftext|>"));
  EXPECT_TRUE(gpt2.eos_id().has_value());
  EXPECT_FALSE(gpt2.bos_id().has_value());
  EXPECT_EQ(gpt2.vocab_size(), 8006);  // 8000 trained, <mask>, <sep>, xyzzy, <rs>, <sep>x, Ωμ
  EXPECT_EQ(gpt2.describe(), "byte-level BPE, 8006 tokens");
  EXPECT_EQ(gpt2.token_id("<sep>"), 8001);
  EXPECT_FALSE(gpt2.token_id("no such token").has_value());
  const Tokenizer& llama = tokenizer("llama3_style");
  EXPECT_EQ(llama.eos_id(), llama.token_id("<|end_of_text|>"));
  EXPECT_EQ(llama.bos_id(), llama.token_id("<|begin_of_text|>"));
  EXPECT_EQ(llama.vocab_size(), 8000);
}

TEST(ByteLevelBpe, DecodeRefusesIdsOutsideTheVocabulary) {
  const Tokenizer& tok = tokenizer("gpt2_style");
  for (const int bad : {tok.vocab_size(), -1, 1 << 30}) {
    try {
      tok.decode(std::vector<int>{5, bad});
      ADD_FAILURE() << bad << " was decoded";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("token id " + std::to_string(bad)), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
