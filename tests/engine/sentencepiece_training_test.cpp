// Training SentencePiece models (engine/data/tokenizer/sentencepiece_training.*,
// hybrid-data train-tokenizer) on the fortune cookies: the models load with our
// loader, round-trip the corpus, and bad input is a named error that leaves
// nothing at the output path.
#include "engine/data/tokenizer/sentencepiece_training.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/data/data_file_error.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "tests/common/error_of.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/engine/fortune_corpus.h"

namespace hybrid::sentencepiece_training_test {

namespace fs = std::filesystem;
using engine::DataFileError;
using engine::SentencePieceTrainingOptions;
using engine::SentencePieceType;
using engine::TokenizerTrainingError;
using engine::train_sentencepiece;
using test::error_of;
using ::testing::HasSubstr;

std::vector<std::string> corpus_files() {
  return {test::kFortunesDir + "/science", test::kFortunesDir + "/wisdom",
          test::kFortunesDir + "/de/witze"};
}

SentencePieceTrainingOptions options(SentencePieceType type, int vocab) {
  SentencePieceTrainingOptions o;
  o.type = type;
  o.vocab_size = vocab;
  o.threads = 2;
  return o;
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// Only the files the test wrote: no model, no temporary.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SentencePieceTrainingTest, TrainedModelsLoadAndRoundTripTheCorpus) {
  const test::TempDir dir;
  for (const SentencePieceType type : {SentencePieceType::kUnigram, SentencePieceType::kBpe}) {
    const std::string name = engine::sentencepiece_type_name(type);
    SCOPED_TRACE(name);
    const std::string out = dir / (name + ".model");
    const auto s = train_sentencepiece(corpus_files(), out, options(type, 1000));
    EXPECT_EQ(s.vocab_size, 1000);
    EXPECT_EQ(s.byte_pieces, 256);
    EXPECT_EQ(s.special_pieces, 3);
    EXPECT_EQ(s.learned_pieces, 1000 - 256 - 3);
    EXPECT_EQ(s.documents, 3);
    int64_t bytes = 0;
    for (const auto& f : corpus_files()) bytes += int64_t(fs::file_size(f));
    EXPECT_EQ(s.bytes, bytes);

    const auto tok = engine::load_sentencepiece(out);
    EXPECT_EQ(tok->vocab_size(), 1000);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->token_id("<s>"), 1);
    EXPECT_EQ(tok->token_id("</s>"), 2);
    size_t tokens = 0, chars = 0;
    for (const auto& file : corpus_files()) {
      for (const std::string& doc : test::fortune_documents(file)) {
        const std::vector<int> ids = tok->encode(doc);
        ASSERT_EQ(tok->decode(ids), doc);
        tokens += ids.size();
        chars += doc.size();
      }
    }
    // Learned pieces, not bytes: well under one token a byte.
    EXPECT_LT(double(tokens), 0.5 * double(chars));
    for (const std::string text :
         {"   runs   of\t\tspaces  ", "digits 0123456789", "😀 日本語 \n\n"})
      EXPECT_EQ(tok->decode(tok->encode(text)), text);

    // The .vocab listing: one line a piece, the piece first.
    std::ifstream vocab(dir / (name + ".vocab"));
    std::string line;
    int lines = 0;
    while (std::getline(vocab, line)) {
      if (lines == 2) {
        EXPECT_EQ(line.substr(0, line.find('\t')), "</s>");
      }
      ++lines;
    }
    EXPECT_EQ(lines, 1000);
  }
  EXPECT_EQ(entries(dir.path()),
            (std::vector<std::string>{"bpe.model", "bpe.vocab", "unigram.model", "unigram.vocab"}));
}

// A line longer than the library's sentence limit is cut, not skipped: a corpus
// of one such line still trains.
TEST(SentencePieceTrainingTest, LongLinesAreCutNotSkipped) {
  const test::TempDir dir;
  std::string line;
  for (const auto& doc : test::fortune_documents(test::kFortunesDir + "/de/witze")) line += doc;
  std::replace(line.begin(), line.end(), '\n', ' ');
  write_file(dir / "one_line.txt", line);
  const auto s = train_sentencepiece({dir / "one_line.txt"}, dir / "m.model",
                                     options(SentencePieceType::kBpe, 500));
  const auto parts =
      int64_t(std::ceil(double(line.size()) / engine::kSentencePieceMaxSentenceBytes));
  EXPECT_GE(s.sentences, parts);
  EXPECT_LE(s.sentences, parts + 1);  // cuts fall on character boundaries
  const auto tok = engine::load_sentencepiece(dir / "m.model");
  EXPECT_EQ(tok->decode(tok->encode(line)), line);
}

TEST(SentencePieceTrainingTest, JsonlDocumentsTrainLikeTextFiles) {
  const test::TempDir dir;
  const auto docs = test::fortune_documents(test::kFortunesDir + "/wisdom");
  std::string jsonl;
  for (const auto& d : docs) jsonl += nlohmann::json{{"text", d}, {"id", 1}}.dump() + "\n\n";
  write_file(dir / "docs.jsonl", jsonl);
  const auto s = train_sentencepiece({dir / "docs.jsonl"}, dir / "m.model",
                                     options(SentencePieceType::kUnigram, 600));
  EXPECT_EQ(s.documents, int64_t(docs.size()));
  EXPECT_EQ(s.vocab_size, 600);
  const auto tok = engine::load_sentencepiece(dir / "m.model");
  for (const auto& d : docs) ASSERT_EQ(tok->decode(tok->encode(d)), d);
}

TEST(SentencePieceTrainingTest, BadInputIsANamedErrorAndWritesNothing) {
  const test::TempDir dir;
  const std::string out = dir / "out.model";
  const auto unigram = options(SentencePieceType::kUnigram, 1000);
  write_file(dir / "empty.txt", "");
  write_file(dir / "blank.jsonl", "\n  \n");
  write_file(dir / "blank_text.jsonl", "{\"text\": \"\"}\n{\"text\": \"\\n\\n\"}\n");
  EXPECT_THAT(error_of<TokenizerTrainingError>([&] {
                train_sentencepiece(
                    {dir / "empty.txt", dir / "blank.jsonl", dir / "blank_text.jsonl"}, out,
                    unigram);
              }),
              HasSubstr("empty corpus: no text in " + dir / "empty.txt"));

  write_file(dir / "docs.jsonl", "{\"text\": \"one\"}\n\n{\"title\": \"two\"}\n");
  EXPECT_THAT(
      error_of<DataFileError>([&] { train_sentencepiece({dir / "docs.jsonl"}, out, unigram); }),
      HasSubstr(dir / "docs.jsonl" + ":3: no \"text\" field"));
  write_file(dir / "bad.jsonl", "{\"text\": \"one\"}\n{\"text\": 2}\n");
  EXPECT_THAT(
      error_of<DataFileError>([&] { train_sentencepiece({dir / "bad.jsonl"}, out, unigram); }),
      HasSubstr(dir / "bad.jsonl" + ":2: \"text\" must be a string, got 2"));
  write_file(dir / "broken.jsonl", "{\"text\": \"one\"\n");
  EXPECT_THAT(
      error_of<DataFileError>([&] { train_sentencepiece({dir / "broken.jsonl"}, out, unigram); }),
      HasSubstr(dir / "broken.jsonl" + ":1: not JSON"));
  // An error after training has begun: the second file's bad line.
  const std::vector<std::string> late = {test::kFortunesDir + "/wisdom", dir / "docs.jsonl"};
  EXPECT_THAT(error_of<DataFileError>([&] { train_sentencepiece(late, out, unigram); }),
              HasSubstr(dir / "docs.jsonl" + ":3"));
  EXPECT_THAT(
      error_of<DataFileError>([&] { train_sentencepiece({dir / "missing.txt"}, out, unigram); }),
      HasSubstr(dir / "missing.txt" + ": cannot read: no such file"));

  // More pieces than the corpus has, and fewer than its characters need.
  write_file(dir / "small.txt", "hello world, hello tokenizer\n");
  for (const SentencePieceType type : {SentencePieceType::kUnigram, SentencePieceType::kBpe})
    EXPECT_THAT(error_of<TokenizerTrainingError>(
                    [&] { train_sentencepiece({dir / "small.txt"}, out, options(type, 1000)); }),
                HasSubstr("Vocabulary size too high (1000). Please set it to a value <="));
  EXPECT_THAT(error_of<TokenizerTrainingError>([&] {
                train_sentencepiece(corpus_files(), out, options(SentencePieceType::kBpe, 100));
              }),
              HasSubstr("cannot train a bpe vocabulary of 100 tokens on"));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir / "out.vocab"));
  EXPECT_EQ(entries(dir.path()),
            (std::vector<std::string>{"bad.jsonl", "blank.jsonl", "blank_text.jsonl",
                                      "broken.jsonl", "docs.jsonl", "empty.txt", "small.txt"}));
}

// ---- hybrid-data train-tokenizer --------------------------------------------------

const std::string kTool = std::string(HYBRID_BINARY_DIR) + "/engine/hybrid-data";

TEST(SentencePieceTrainingTest, HybridDataTrainTokenizerWritesAModelAndOneSummaryLine) {
  ASSERT_TRUE(fs::exists(kTool)) << kTool << " is a dependency of this test executable";
  const test::TempDir dir;
  std::string jsonl;
  const auto docs = test::fortune_documents(test::kFortunesDir + "/de/witze");
  for (const auto& d : docs) jsonl += nlohmann::json{{"text", d}}.dump() + "\n";
  write_file(dir / "witze.jsonl", jsonl);
  const std::string out = dir / "models/tok.model";  // the folder is made
  const auto r =
      test::run_command(kTool + " train-tokenizer --type bpe --vocab 800 --threads 2 --out " + out +
                        " " + dir / "witze.jsonl " + test::kFortunesDir + "/wisdom");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // SentencePiece's log stays quiet: our line only.
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr(fmt::format("wrote {}: SentencePiece bpe, 800 tokens ({} learned, "
                                    "256 bytes, 3 special) from {} documents",
                                    out, 800 - 256 - 3, docs.size() + 1)));
  const auto tok = engine::load_sentencepiece(out);
  EXPECT_EQ(tok->vocab_size(), 800);
  EXPECT_TRUE(fs::exists(dir / "models/tok.vocab"));

  const auto verbose =
      test::run_command(kTool + " train-tokenizer --type unigram --vocab 500 --verbose --out " +
                        dir / "v.model " + test::kFortunesDir + "/wisdom");
  ASSERT_EQ(verbose.exit_code, 0) << verbose.output;
  EXPECT_THAT(verbose.output, HasSubstr("trainer_interface.cc"));  // the library's log

  write_file(dir / "bad.jsonl", "{\"text\": \"a\"}\n[1, 2]\n");
  const auto bad = test::run_command(kTool + " train-tokenizer --vocab 500 --out " +
                                     dir / "bad.model " + dir / "bad.jsonl");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr("hybrid-data: " + dir / "bad.jsonl" +
                                    ":2: a JSONL document must be "
                                    "an object with a \"text\" field, got [1,2]"));
  write_file(dir / "empty.txt", "");
  const auto empty = test::run_command(kTool + " train-tokenizer --vocab 500 --out " +
                                       dir / "bad.model " + dir / "empty.txt");
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_THAT(empty.output,
              HasSubstr("hybrid-data: empty corpus: no text in " + dir / "empty.txt"));
  EXPECT_FALSE(fs::exists(dir / "bad.model"));
  const auto type =
      test::run_command(kTool + " train-tokenizer --type wordpiece --vocab 500 --out " +
                        dir / "bad.model " + dir / "empty.txt");
  EXPECT_EQ(type.exit_code, 1);
  EXPECT_THAT(type.output, HasSubstr("--type"));
}

}  // namespace hybrid::sentencepiece_training_test
