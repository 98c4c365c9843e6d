// GPT-2's byte-to-unicode map: byte-level BPE writes each byte of the text as
// one printable character (the printable Latin-1 bytes as themselves, the rest
// from U+0100 on), so that tokenizer.json's vocabulary and merges are strings.
// hybrid works on the bytes themselves: tokens are read back into bytes once,
// when the file is loaded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hybrid::engine {

// The character (UTF-8) that stands for `byte`.
std::string byte_level_char(unsigned char byte);

// The bytes a token of the vocabulary stands for, or nullopt when one of its
// characters is not in the alphabet (an added token such as "<|endoftext|>"
// written plainly is in it; "<|end of text|>", with a space, is not).
std::optional<std::string> byte_level_bytes(std::string_view token);

}  // namespace hybrid::engine
