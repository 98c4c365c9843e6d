// A Hugging Face tokenizer.json as load_byte_level_bpe reads it (hybrid-data
// tokenize, hybrid-generate), then a text of whitespace runs, digits,
// contractions, special tokens, emoji and invalid UTF-8 encoded and decoded:
// every id inside the vocabulary, and decode of them never refuses one. The
// only error allowed is DataFileError naming the file (and, from encode, PCRE2
// giving up on a pathological split pattern: std::runtime_error saying so).
#include <memory>

#include "engine/data/data_file_error.h"
#include "engine/data/tokenizer/tokenizer.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hybrid::engine;
  const std::string path = hybrid::fuzz::write_input("tokenizer.json", data, size);
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = load_byte_level_bpe(path);
  } catch (const DataFileError& e) {
    hybrid::fuzz::expect_mentions(e, path);
    return 0;
  }
  static const std::string text =
      "Hello  world\t\n\n<|endoftext|>x 12345 they'll IT'S \xE6\x97\xA5\xE6\x9C\xAC "
      "\xF0\x9F\x98\x80 <s></s><|begin_of_text|> \xFF\xC3 end   ";
  std::vector<int> ids;
  try {
    ids = tok->encode(text);
  } catch (const std::runtime_error& e) {
    hybrid::fuzz::expect_mentions(e, "PCRE2");
    return 0;
  }
  for (const int id : ids)
    if (id < 0 || id >= tok->vocab_size()) std::abort();
  (void)tok->decode(ids);
  return 0;
}
