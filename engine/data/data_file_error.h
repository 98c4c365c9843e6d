// Errors from reading or writing data files (token shards, llm.c checkpoints).
// Messages start with the file's path and say what is wrong with it.
#pragma once

#include <stdexcept>

namespace hybrid::engine {

class DataFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hybrid::engine
