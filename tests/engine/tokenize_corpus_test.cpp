// `hybrid-data tokenize`'s core (engine/data/tokenize_corpus.h) on real files:
// documents in order, the end-of-text token before each, the validation split,
// shard sizes and widths, determinism over threads, and bad input that leaves
// nothing behind (also when the process is killed mid-run). The tokenizer here
// encodes each byte as its own id, so the expected shards follow from the text
// alone; the real tokenizers are proven in their own tests.
#include "engine/data/tokenize_corpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/data/data_file_error.h"
#include "engine/data/token_dataset.h"
#include "engine/data/token_shard.h"
#include "engine_test_util.h"

namespace {

namespace fs = std::filesystem;
using namespace hybrid::engine;
using ::testing::HasSubstr;

// Byte b is id offset + b; the end-of-text token is offset + 256.
class ByteTokenizer : public Tokenizer {
 public:
  explicit ByteTokenizer(int offset = 0, bool has_eot = true) : offset_(offset), eot_(has_eot) {}
  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    for (unsigned char c : text) ids.push_back(offset_ + c);
    return ids;
  }
  std::string decode(std::span<const int> ids) const override {
    std::string s;
    for (int id : ids) s.push_back(char(id - offset_));
    return s;
  }
  int vocab_size() const override { return offset_ + 257; }
  std::optional<int> token_id(std::string_view) const override { return std::nullopt; }
  std::optional<int> eos_id() const override {
    return eot_ ? std::optional<int>(offset_ + 256) : std::nullopt;
  }
  std::optional<int> bos_id() const override { return std::nullopt; }
  std::string describe() const override { return "bytes"; }

 private:
  int offset_;
  bool eot_;
};

class TokenizeCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("hybrid_tokenize_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string file(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / "in" / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string out(const std::string& name = "out") const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::vector<uint32_t> stream(const std::vector<std::string>& docs, int offset = 0) {
    std::vector<uint32_t> s;
    for (const auto& d : docs) {
      s.push_back(uint32_t(offset + 256));
      for (unsigned char c : d) s.push_back(uint32_t(offset + c));
    }
    return s;
  }
  static std::vector<uint32_t> read_split(const std::string& pattern) {
    const TokenDataset d = TokenDataset::open(pattern);
    std::vector<uint32_t> s;
    for (int64_t i = 0; i < d.size(); ++i) s.push_back(d.at(i));
    return s;
  }

  fs::path dir_;
};

TEST_F(TokenizeCorpus, DocumentsFollowInputOrderEachAfterTheEndOfText) {
  // A text file is one document, a JSONL line one document, a folder its files in
  // byte order (hidden ones skipped); empty documents and blank lines are skipped.
  const std::string a = file("a.txt", "first doc\n  with spaces\n");
  const std::string j = file("b.jsonl",
                             "{\"text\": \"line one\"}\n\n{\"text\": \"\"}\n"
                             "{\"text\": \"line \\u00e9 two\", \"id\": 7}\n");
  file("dir/z.txt", "zed");
  file("dir/sub/m.txt", "em");
  file("dir/.hidden.txt", "never");
  file("empty.txt", "");
  TokenizeOptions o;
  o.out_dir = out();
  const auto s = tokenize_corpus(
      ByteTokenizer(), {a, j, (dir_ / "in/dir").string(), (dir_ / "in/empty.txt").string()}, o);
  const std::vector<std::string> docs = {"first doc\n  with spaces\n", "line one",
                                         "line \xc3\xa9 two", "em", "zed"};
  EXPECT_EQ(read_split(out() + "/train_*.bin"), stream(docs));
  EXPECT_EQ(s.files, std::vector<std::string>{"train_000000.bin"});
  EXPECT_EQ(s.documents, 5);
  EXPECT_EQ(s.empty_documents, 2);
  EXPECT_EQ(s.train_documents, 5);
  EXPECT_EQ(s.val_documents, 0);
  EXPECT_EQ(s.train_tokens, int64_t(stream(docs).size()));
  EXPECT_EQ(s.token_bytes, 2);
  EXPECT_EQ(MappedTokenShard(out() + "/train_000000.bin").token_bytes(), 2);
  EXPECT_EQ(listing(), (std::vector<std::string>{"in", "out"}));  // no staging folder left
}

TEST_F(TokenizeCorpus, ValidationTakesEveryNthDocumentAndShardsAreFull) {
  std::vector<std::string> docs, inputs;
  for (int i = 0; i < 12; ++i) {
    docs.push_back(std::string(size_t(3 + i), char('a' + i)));
    inputs.push_back(file(fmt::format("d{:02d}.txt", i), docs.back()));
  }
  // The split's formula: any prefix of n documents sends floor(n f) to validation.
  for (double f : {0.0, 0.1, 0.25, 1.0 / 3, 0.5, 0.9}) {
    int64_t val = 0;
    for (int64_t n = 1; n <= 1000; ++n) {
      val += is_validation_document(n - 1, f);
      ASSERT_EQ(val, int64_t(std::floor(double(n) * f))) << f << " " << n;
    }
  }
  TokenizeOptions o;
  o.out_dir = out();
  o.val_fraction = 0.25;  // documents 3, 7, 11
  o.shard_tokens = 10;
  const auto s = tokenize_corpus(ByteTokenizer(), inputs, o);
  std::vector<std::string> train_docs, val_docs;
  for (int i = 0; i < 12; ++i) (i % 4 == 3 ? val_docs : train_docs).push_back(docs[size_t(i)]);
  const auto train = stream(train_docs), val = stream(val_docs);
  EXPECT_EQ(read_split(out() + "/train_*.bin"), train);
  EXPECT_EQ(read_split(out() + "/val_*.bin"), val);
  EXPECT_EQ(s.train_documents, 9);
  EXPECT_EQ(s.val_documents, 3);
  // Every shard holds shard_tokens but the last of its split.
  ASSERT_EQ(s.files.size(), (train.size() + 9) / 10 + (val.size() + 9) / 10);
  for (const auto& name : s.files) {
    const MappedTokenShard shard(out() + "/" + name);
    const bool last = name == fmt::format("train_{:06d}.bin", (train.size() - 1) / 10) ||
                      name == fmt::format("val_{:06d}.bin", (val.size() - 1) / 10);
    if (!last) {
      EXPECT_EQ(shard.size(), 10) << name;
    }
  }
}

TEST_F(TokenizeCorpus, ShardsAreTheSameBytesWhateverTheThreadCount) {
  std::vector<std::string> inputs;
  for (int i = 0; i < 40; ++i)
    inputs.push_back(
        file(fmt::format("d{:02d}.txt", i), std::string(size_t(50 + 37 * i % 101), 'x')));
  TokenizeOptions o;
  o.shard_tokens = 333;
  o.val_fraction = 0.1;
  o.batch_bytes = 500;  // many batches
  std::vector<std::string> contents[2];
  for (int threads : {1, 2}) {
    o.threads = threads;
    o.out_dir = out(fmt::format("out{}", threads));
    const auto s = tokenize_corpus(ByteTokenizer(), inputs, o);
    for (const auto& name : s.files) {
      std::ifstream in(o.out_dir + "/" + name, std::ios::binary);
      contents[threads - 1].push_back(name + std::string(std::istreambuf_iterator<char>(in), {}));
    }
  }
  EXPECT_GT(contents[0].size(), 4u);
  EXPECT_EQ(contents[0], contents[1]);
}

TEST_F(TokenizeCorpus, WideVocabulariesWriteVersionTwoShards) {
  const ByteTokenizer wide(70000);  // ids 70000..70256
  TokenizeOptions o;
  o.out_dir = out();
  const auto s = tokenize_corpus(wide, {file("a.txt", "hi")}, o);
  EXPECT_EQ(s.token_bytes, 4);
  const MappedTokenShard shard(out() + "/train_000000.bin");
  EXPECT_EQ(shard.token_bytes(), 4);
  EXPECT_EQ(read_token_shard(shard.path()), stream({"hi"}, 70000));
  // Asking for 16-bit tokens is refused before anything is written.
  o.out_dir = out("narrow");
  o.token_bytes = 2;
  try {
    tokenize_corpus(wide, {file("b.txt", "x")}, o);
    ADD_FAILURE() << "16-bit tokens accepted for ids past 65535";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("vocabulary (70257 tokens) does not fit 16-bit shard tokens"));
  }
  EXPECT_FALSE(fs::exists(out("narrow")));
}

TEST_F(TokenizeCorpus, BadInputIsNamedAndLeavesNothing) {
  TokenizeOptions o;
  o.out_dir = out();
  const auto error = [&](const Tokenizer& t, const std::vector<std::string>& inputs) {
    try {
      tokenize_corpus(t, inputs, o);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const ByteTokenizer bytes;
  const std::string empty = file("empty.txt", "");
  EXPECT_THAT(error(bytes, {empty}), HasSubstr(empty + ": the corpus holds no document with text"));
  const std::string bad = file("bad.jsonl", "{\"text\": \"ok\"}\n{\"txt\": \"typo\"}\n");
  EXPECT_THAT(error(bytes, {bad}), HasSubstr(bad + ":2: no \"text\" field"));
  const std::string nonjson = file("nonjson.jsonl", "{\"text\": \"ok\"}\n\nplain words\n");
  EXPECT_THAT(error(bytes, {nonjson}), HasSubstr(nonjson + ":3: not JSON"));
  const std::string number = file("number.jsonl", "{\"text\": 5}\n");
  EXPECT_THAT(error(bytes, {number}), HasSubstr(number + ":1: \"text\" must be a string, got 5"));
  EXPECT_EQ(error(bytes, {out("absent.txt")}),
            out("absent.txt") + ": cannot read: no such file or folder");
  EXPECT_THAT(error(ByteTokenizer(0, false), {file("a.txt", "x")}),
              HasSubstr("the tokenizer (bytes) has no end-of-text token"));
  o.val_fraction = 1;
  EXPECT_THAT(error(bytes, {file("a.txt", "x")}), HasSubstr("must be in [0, 1), got 1"));
  o.val_fraction = 0;
  EXPECT_EQ(listing(), std::vector<std::string>{"in"});  // no output, no staging folder
  // An output folder that holds anything is never written into.
  fs::create_directories(out());
  std::ofstream(out() + "/train_000000.bin") << "precious";
  EXPECT_THAT(error(bytes, {file("a.txt", "x")}),
              HasSubstr(out() + ": the output folder already exists and is not empty"));
  std::ifstream kept(out() + "/train_000000.bin");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "precious");
}

TEST_F(TokenizeCorpus, AKilledRunLeavesNoShardInTheOutputFolder) {
  std::vector<std::string> inputs;
  for (int i = 0; i < 20; ++i) inputs.push_back(file(fmt::format("d{:02d}.txt", i), "abcdef"));
  TokenizeOptions o;
  o.out_dir = out();
  o.shard_tokens = 7;
  o.batch_bytes = 1;  // one document a batch: the kill comes after shards were written
  o.threads = 1;      // no OpenMP team to fork
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    tokenize_corpus(ByteTokenizer(), inputs, o, [](const TokenizeProgress& p) {
      if (p.documents == 10) ::raise(SIGKILL);
    });
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(fs::exists(out()));
  // What it wrote is only in the hidden staging folder, which no shard glob matches.
  const std::string staging = ".out.partial-" + std::to_string(child);
  EXPECT_EQ(listing(), (std::vector<std::string>{staging, "in"}));
  EXPECT_FALSE(fs::is_empty(dir_ / staging));
}

// The command line, with the two real tokenizers whose own tests prove them
// equal to their reference libraries: shards hold what each encodes, after its
// end-of-text token; the progress bar and the summary are printed.
TEST_F(TokenizeCorpus, HybridDataTokenizeWritesWhatTheTokenizerEncodes) {
  const std::string data = std::string(HYBRID_SOURCE_DIR) + "/tests/engine/data/";
  const std::string a = file("a.txt", "Hello world\n  twice  spaced\t\n");
  const std::string b =
      file("b.jsonl", "{\"text\": \"Gr\\u00fc\\u00dfe 123\"}\n{\"text\": \"second\"}\n");
  const std::vector<std::string> docs = {"Hello world\n  twice  spaced\t\n",
                                         "Gr\xc3\xbc\xc3\x9f"
                                         "e 123",
                                         "second"};
  int k = 0;
  for (const std::string& tok :
       {data + "tokenizer/gpt2_style.json", data + "sentencepiece/fortunes_bpe_1000.model"}) {
    SCOPED_TRACE(tok);
    const auto tokenizer = open_tokenizer(tok);
    const std::string dir = out(fmt::format("out{}", k++));
    const auto r = hybrid::test::run_command(hybrid::test::tool("hybrid-data") +
                                             " tokenize --tokenizer " + tok + " --out " + dir +
                                             " --val-fraction 0.5 --threads 2 " + a + " " + b);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("tokenize [########################] 100.0%"));
    EXPECT_THAT(r.output, HasSubstr("train: 2 documents"));
    // Document 1 of 3 goes to validation (floor(2 * 0.5) > floor(1 * 0.5)).
    auto expected = [&](std::vector<size_t> which) {
      std::vector<uint32_t> s;
      for (size_t i : which) {
        s.push_back(uint32_t(*tokenizer->eos_id()));
        for (int id : tokenizer->encode(docs[i])) s.push_back(uint32_t(id));
      }
      return s;
    };
    EXPECT_EQ(read_split(dir + "/train_*.bin"), expected({0, 2}));
    EXPECT_EQ(read_split(dir + "/val_*.bin"), expected({1}));
  }
  // A bad line: exit 1, the file and line named, no output folder.
  const std::string bad = file("bad.jsonl", "{\"text\": \"ok\"}\n{\"body\": \"x\"}\n");
  const auto r =
      hybrid::test::run_command(hybrid::test::tool("hybrid-data") + " tokenize --tokenizer " +
                                data + "tokenizer/gpt2_style.json --out " + out("bad") + " " + bad);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(bad + ":2: no \"text\" field"));
  EXPECT_FALSE(fs::exists(out("bad")));
}

}  // namespace
