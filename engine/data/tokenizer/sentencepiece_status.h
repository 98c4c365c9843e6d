// SentencePiece's error statuses as text for our messages.
#pragma once

#include <sentencepiece_processor.h>

#include <string>

namespace hybrid::engine {

// The library's own words, without the source location and failed check it
// puts first ("./src/x.cc(12) [expr] message"); "" when only those are there.
inline std::string sentencepiece_status_text(const sentencepiece::util::Status& status) {
  std::string text = status.message();
  if (text.rfind("./src/", 0) == 0) {
    const size_t end = text.find("] ");
    text = end == std::string::npos ? std::string() : text.substr(end + 2);
  }
  return text;
}

}  // namespace hybrid::engine
