// Errors of the run store. Every message names the database file at fault.
#pragma once

#include <stdexcept>

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

}  // namespace hybrid::profiler
