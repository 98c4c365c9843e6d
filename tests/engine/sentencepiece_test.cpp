// SentencePiece models (engine/data/tokenizer/sentencepiece_*): encodings equal
// those of the library's Python package, sentencepiece 0.1.99 from PyPI (its own
// build, not Debian's libsentencepiece 0.1.97 that hybrid links), on the fortune
// cookies (tests/engine/data/sentencepiece/make_reference.py wrote the reference);
// round trips; special tokens; the invalid-UTF-8 policy; load errors.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/data/data_file_error.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "tests/common/error_of.h"
#include "tests/common/temp_dir.h"
#include "tests/engine/fortune_corpus.h"

namespace hybrid::sentencepiece_test {

namespace fs = std::filesystem;
using engine::DataFileError;
using engine::load_sentencepiece;
using test::error_of;
using ::testing::HasSubstr;

const std::string kReferenceDir =
    std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/sentencepiece";
const char* const kUnigram = "fortunes_unigram_1000.model";
const char* const kBpe = "fortunes_bpe_1000.model";
const char* const kPlain = "wisdom_unigram_400_no_bos_eos.model";  // the library's trainer

nlohmann::json reference() {
  const std::string text = test::read_bytes(kReferenceDir + "/reference.json");
  return nlohmann::json::parse(text);
}

std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return bytes;
}

// Valid UTF-8 text with what the corpus lacks: runs of whitespace, digits,
// emoji, CJK, leading spaces, special-token text.
std::vector<std::string> crafted_texts() {
  return {"",
          " ",
          "   ",
          "\n",
          "\n\n  \t\t\r\n",
          "  two leading, three   inner,\ttab\t\tand\n\nnewlines  ",
          " 1234567890 3.14159 2026-12-05 0x1F 000",
          "emoji 😀👍🏽 🇩🇪 and CJK 日本語の文章, 中文 한국어",
          "Grüße aus Köln – „Anführungszeichen“ « » ß ẞ",
          "</s><s><unk>",
          "\x01\x7f control bytes \x1b[0m"};
}

TEST(SentencePieceTest, EncodingsEqualTheLibrarysPythonPackage) {
  const nlohmann::json ref = reference();
  ASSERT_EQ(ref.at("sentencepiece"), "0.1.99");
  const nlohmann::json& models = ref.at("models");
  ASSERT_EQ(models.size(), 3u);
  for (const auto& [name, expected] : models.items()) {
    SCOPED_TRACE(name);
    const auto tok = load_sentencepiece(kReferenceDir + "/" + name);
    EXPECT_EQ(tok->vocab_size(), expected.at("vocab_size").get<int>());
    int64_t documents = 0;
    for (const auto& file : expected.at("files")) {
      const std::string path = test::kFortunesDir + "/" + file.at("file").get<std::string>();
      const auto docs = test::fortune_documents(path);
      const auto counts = file.at("counts").get<std::vector<size_t>>();
      ASSERT_EQ(docs.size(), counts.size()) << path;
      uint64_t hash = 0xCBF29CE484222325ull;
      for (size_t d = 0; d < docs.size(); ++d) {
        const std::vector<int> ids = tok->encode(docs[d]);
        ASSERT_EQ(ids.size(), counts[d]) << path << " document " << d << ":\n" << docs[d];
        hash = test::fnv1a64(ids, hash);
      }
      EXPECT_EQ(fmt::format("{:016x}", hash), file.at("fnv1a64").get<std::string>()) << path;
      documents += int64_t(docs.size());
    }
    EXPECT_GT(documents, 2000);
    for (const auto& extra : expected.at("extras")) {
      const std::string text = from_hex(extra.at("hex"));
      EXPECT_EQ(tok->encode(text), extra.at("ids").get<std::vector<int>>()) << text;
    }
  }
}

TEST(SentencePieceTest, DecodeInvertsEncodeOnTheCorpusAndCraftedText) {
  for (const char* name : {kUnigram, kBpe}) {
    SCOPED_TRACE(name);
    const auto tok = load_sentencepiece(kReferenceDir + "/" + name);
    for (const char* file : {"science", "wisdom", "de/witze"})
      for (const std::string& doc : test::fortune_documents(test::kFortunesDir + "/" + file))
        ASSERT_EQ(tok->decode(tok->encode(doc)), doc);
    for (const std::string& text : crafted_texts()) {
      const std::vector<int> ids = tok->encode(text);
      EXPECT_EQ(tok->decode(ids), text);
      // Byte fallback: no character becomes the unknown token.
      EXPECT_THAT(ids, ::testing::Not(::testing::Contains(*tok->token_id("<unk>")))) << text;
    }
  }
}

// The interface promises thread-safe encode: threads encoding the same documents
// at once get the ids of one thread alone.
TEST(SentencePieceTest, EncodeFromManyThreadsEqualsOneThread) {
  const auto tok = load_sentencepiece(kReferenceDir + "/" + kUnigram);
  const auto docs = test::fortune_documents(test::kFortunesDir + "/wisdom");
  std::vector<std::vector<int>> alone;
  for (const auto& d : docs) alone.push_back(tok->encode(d));
  std::vector<std::vector<std::vector<int>>> got(4, std::vector<std::vector<int>>(docs.size()));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t d = 0; d < docs.size(); ++d) got[t][d] = tok->encode(docs[d]);
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, alone);
}

// The one valid character that does not come back: U+2581 "▁", SentencePiece's
// mark for a space, decodes as a space (docs/text.md).
TEST(SentencePieceTest, TheSpaceMarkInTextDecodesAsASpace) {
  for (const char* name : {kUnigram, kBpe}) {
    const auto tok = load_sentencepiece(kReferenceDir + "/" + name);
    EXPECT_EQ(tok->decode(tok->encode("a▁b ▁▁")), "a b   ") << name;
  }
}

// The library's own policy, which encode keeps: each byte that does not start a
// valid UTF-8 sequence stands for U+FFFD (written in bytes where the model lacks
// the character), so decoding gives the text with each such byte replaced.
TEST(SentencePieceTest, InvalidUtf8BytesBecomeReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\xff"
       "b",
       "a" + fffd + "b"},
      {"\x80\x80", fffd + fffd},             // stray continuation bytes
      {"x\xc3(", "x" + fffd + "("},          // a lead byte without its continuation
      {"end\xe2\x82", "end" + fffd + fffd},  // a truncated three-byte character
      {"ok \xc3\xa4 \xf0\x9f", "ok \xc3\xa4 " + fffd + fffd}};
  for (const char* name : {kUnigram, kBpe}) {
    const auto tok = load_sentencepiece(kReferenceDir + "/" + name);
    for (const auto& [text, decoded] : cases)
      EXPECT_EQ(tok->decode(tok->encode(text)), decoded) << name;
  }
}

TEST(SentencePieceTest, SpecialTokensAreTheModelsOwnAndNotMatchedInText) {
  const auto tok = load_sentencepiece(kReferenceDir + "/" + kUnigram);
  EXPECT_EQ(tok->vocab_size(), 1000);
  EXPECT_EQ(tok->token_id("<unk>"), 0);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->token_id("<s>"), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->token_id("</s>"), 2);
  EXPECT_EQ(tok->token_id("<0x0A>"), 3 + 0x0A);             // byte pieces follow the specials
  EXPECT_EQ(tok->token_id("no such piece"), std::nullopt);  // not <unk>'s id
  EXPECT_EQ(tok->token_id(""), std::nullopt);
  // "</s>" in text is characters, as the library encodes it (reference.json).
  EXPECT_THAT(tok->encode("Hello </s> world"), ::testing::Not(::testing::Contains(2)));
  // Control tokens decode to nothing.
  const std::vector<int> hello = tok->encode("Hello");
  std::vector<int> framed = {1};
  framed.insert(framed.end(), hello.begin(), hello.end());
  framed.push_back(2);
  EXPECT_EQ(tok->decode(framed), "Hello");
  EXPECT_THAT(tok->describe(), HasSubstr("SentencePiece, 1000 tokens (byte fallback)"));

  // A model with <s> and </s> disabled (id -1), trained without byte fallback.
  const auto plain = load_sentencepiece(kReferenceDir + "/" + kPlain);
  EXPECT_EQ(plain->bos_id(), std::nullopt);
  EXPECT_EQ(plain->eos_id(), std::nullopt);
  EXPECT_EQ(plain->token_id("</s>"), std::nullopt);
  EXPECT_EQ(plain->token_id("<unk>"), 0);
  EXPECT_EQ(plain->describe(), "SentencePiece, 400 tokens");
}

TEST(SentencePieceTest, DecodeRefusesIdsOutsideTheVocabulary) {
  const auto tok = load_sentencepiece(kReferenceDir + "/" + kBpe);
  const std::vector<int> ok = {5, 999};
  EXPECT_NO_THROW(tok->decode(ok));
  for (const int bad : {1000, -1, 1 << 30}) {
    const std::vector<int> ids = {5, bad};
    const std::string e = error_of<std::out_of_range>([&] { tok->decode(ids); }, "no error");
    EXPECT_THAT(
        e, HasSubstr("token id " + std::to_string(bad) + " is outside the vocabulary of 1000"));
  }
}

TEST(SentencePieceTest, LoadErrorsNameTheFile) {
  const test::TempDir dir;
  const std::string good = test::read_bytes(kReferenceDir + "/" + kUnigram);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"empty.model", ""},
      {"tokenizer.json", R"({"model": {"type": "BPE", "vocab": {}}})"},
      {"truncated.model", good.substr(0, good.size() / 2)},
  };
  for (const auto& [name, content] : files) {
    const std::string path = dir / name;  // clang 14 captures no structured binding
    std::ofstream(path, std::ios::binary) << content;
    const std::string e = error_of<DataFileError>([&] { load_sentencepiece(path); });
    EXPECT_THAT(e, HasSubstr(path + ": not a SentencePiece model")) << name;
  }
  EXPECT_THAT(error_of<DataFileError>([&] { load_sentencepiece(dir / "missing.model"); }),
              HasSubstr(dir / "missing.model" + ": cannot read: no such file"));
  EXPECT_THAT(error_of<DataFileError>([&] { load_sentencepiece(dir.path().string()); }),
              HasSubstr(dir.path().string() + ": is a directory"));
}

}  // namespace hybrid::sentencepiece_test
