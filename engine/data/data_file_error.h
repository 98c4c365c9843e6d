// Errors from reading or writing data files (token shards, llm.c checkpoints).
// Messages start with the file's path and say what is wrong with it. The same
// type as base::FileError, so that a failed atomic write is caught alike.
#pragma once

#include "base/atomic_file.h"

namespace hybrid::engine {

using DataFileError = base::FileError;

}  // namespace hybrid::engine
