// Errors of the run store. Every message names the database file at fault.
#pragma once

#include <stdexcept>
#include <string>

namespace hybrid::profiler {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The write lock stayed taken past the busy timeout, on every retry.
class StoreBusyError : public StoreError {
 public:
  using StoreError::StoreError;
};

// A stored value the reader cannot interpret (a damaged file, or rows written by
// another tool past the schema's CHECKs): the parse error becomes a StoreError
// naming the file and the row.
template <class Parse>
auto read_stored(const std::string& db, const std::string& row, Parse&& parse) {
  try {
    return parse();
  } catch (const std::invalid_argument& e) {
    throw StoreError("database " + db + ": " + row + ": " + e.what());
  }
}

}  // namespace hybrid::profiler
