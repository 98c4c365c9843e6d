// One interface for every tokenizer hybrid reads: Hugging Face's byte-level BPE
// (tokenizer.json: GPT-2, Llama 3) and SentencePiece models (Llama 1/2).
// hybrid-data tokenize, hybrid-generate and the rollout loop see only this.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::engine {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text`, as the reference library encodes it without adding
  // special tokens (Hugging Face: add_special_tokens=False). Byte-level BPE
  // matches special and added tokens written in the text as themselves, as
  // Hugging Face does; SentencePiece, like its library, never does ("</s>" in
  // text is plain text). Text that is not valid UTF-8 follows the policy in
  // docs/text.md. Thread-safe.
  virtual std::vector<int> encode(std::string_view text) const = 0;
  // The text of `ids`; decode(encode(x)) == x for valid UTF-8 x. Throws
  // std::out_of_range naming the id when one is outside the vocabulary.
  virtual std::string decode(std::span<const int> ids) const = 0;
  // Every id is below this (added and special tokens included).
  virtual int vocab_size() const = 0;
  // The id of one token written as text ("<|endoftext|>", "</s>"), if it exists.
  virtual std::optional<int> token_id(std::string_view token) const = 0;
  // The end-of-text token that separates documents (GPT-2's <|endoftext|>,
  // Llama's </s>), and the beginning-of-sequence token where the model has one.
  virtual std::optional<int> eos_id() const = 0;
  virtual std::optional<int> bos_id() const = 0;
  // What the tokenizer is, for messages and records: "byte-level BPE, 50257 tokens".
  virtual std::string describe() const = 0;
};

// Loaders, each throwing DataFileError naming the file and what is wrong.
std::unique_ptr<Tokenizer> load_byte_level_bpe(const std::string& tokenizer_json);
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_file);
// A tokenizer.json, a SentencePiece .model, or a directory holding one of them
// (a Hugging Face model directory: tokenizer.json first, then tokenizer.model).
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path);
// Whether `path` is a folder that open_tokenizer finds a tokenizer in (a
// Hugging Face model directory brings its tokenizer along).
bool folder_holds_tokenizer(const std::string& path);

}  // namespace hybrid::engine
