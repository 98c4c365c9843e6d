// Text that is not valid UTF-8 made valid the way Python's
// bytes.decode("utf-8", errors="replace") and Rust's String::from_utf8_lossy
// do: each maximal ill-formed subpart (Unicode's "substitution of maximal
// subparts") becomes one U+FFFD. The byte-level BPE encodes the repaired text
// (what a user passing that text to Hugging Face would have) and repairs what
// it decodes, as Hugging Face's ByteLevel decoder does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hybrid::engine {

// The length of the longest valid UTF-8 prefix of `text`.
size_t valid_utf8_prefix(std::string_view text);

// `text` itself when it is valid UTF-8; otherwise its repair, written to `scratch`.
std::string_view repair_utf8(std::string_view text, std::string& scratch);

}  // namespace hybrid::engine
