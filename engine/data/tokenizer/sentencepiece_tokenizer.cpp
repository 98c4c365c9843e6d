// SentencePiece models (.model: a serialized ModelProto, Llama 1/2's
// tokenizer.model) through the Debian library. Encoding is the library's own:
// its normalizer, its dummy-prefix "▁", byte fallback where the model has it;
// text such as "</s>" is encoded as characters, never as the control token
// (docs/text.md says how this differs from Hugging Face's LlamaTokenizer).
#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include <stdexcept>

#include "engine/data/data_file_error.h"
#include "engine/data/text_documents.h"
#include "engine/data/tokenizer/sentencepiece_status.h"
#include "engine/data/tokenizer/tokenizer.h"

namespace hybrid::engine {

namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) : path_(path) {
    const std::string bytes = read_whole_file(path);
    if (bytes.empty())
      throw DataFileError(fmt::format("{}: not a SentencePiece model: empty file", path));
    const auto status = processor_.LoadFromSerializedProto(bytes);
    if (!status.ok()) {
      const std::string why = sentencepiece_status_text(status);
      throw DataFileError(fmt::format("{}: not a SentencePiece model: {}", path,
                                      why.empty() ? "not a ModelProto protobuf" : why));
    }
    for (int id = 0; id < processor_.GetPieceSize(); ++id) byte_fallback_ |= processor_.IsByte(id);
  }

  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    const auto status = processor_.Encode(text, &ids);
    if (!status.ok())
      throw std::runtime_error(fmt::format("{}: encode failed: {}", path_, status.ToString()));
    return ids;
  }

  std::string decode(std::span<const int> ids) const override {
    const int size = vocab_size();
    for (const int id : ids)
      if (id < 0 || id >= size)
        throw std::out_of_range(
            fmt::format("{}: token id {} is outside the vocabulary of {} tokens", path_, id, size));
    std::string text;
    const auto status = processor_.Decode(std::vector<int>(ids.begin(), ids.end()), &text);
    if (!status.ok())
      throw std::runtime_error(fmt::format("{}: decode failed: {}", path_, status.ToString()));
    return text;
  }

  int vocab_size() const override { return processor_.GetPieceSize(); }

  // PieceToId answers the unknown token for a piece it does not hold.
  std::optional<int> token_id(std::string_view token) const override {
    const int id = processor_.PieceToId(token);
    if (id < 0 || processor_.IdToPiece(id) != token) return std::nullopt;
    return id;
  }

  std::optional<int> eos_id() const override { return id_if_enabled(processor_.eos_id()); }
  std::optional<int> bos_id() const override { return id_if_enabled(processor_.bos_id()); }

  std::string describe() const override {
    return fmt::format("SentencePiece, {} tokens{}", vocab_size(),
                       byte_fallback_ ? " (byte fallback)" : "");
  }

 private:
  // The library's id of a special token, -1 when the model disables it.
  static std::optional<int> id_if_enabled(int id) {
    return id < 0 ? std::nullopt : std::optional<int>(id);
  }

  std::string path_;
  sentencepiece::SentencePieceProcessor processor_;
  bool byte_fallback_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_file) {
  return std::make_unique<SentencePieceTokenizer>(model_file);
}

}  // namespace hybrid::engine
