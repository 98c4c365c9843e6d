#include "profiler/import/gz_streambuf.h"

#include <fmt/format.h>

namespace hybrid::profiler::import {

GzStreamBuf::int_type GzStreamBuf::underflow() {
  if (!error_.empty()) return traits_type::eof();
  const int n = gzread(file_, buffer_.data(), unsigned(buffer_.size()));
  int code = Z_OK;
  const char* message = gzerror(file_, &code);
  if (n < 0 || (code != Z_OK && code != Z_BUF_ERROR)) {
    error_ = fmt::format("unreadable gzip data ({})", message ? message : "unknown zlib error");
    return traits_type::eof();
  }
  if (n == 0) {
    // zlib reports a gzip stream cut short as Z_BUF_ERROR at the end of input.
    if (code == Z_BUF_ERROR) error_ = "truncated gzip stream (unexpected end of file)";
    return traits_type::eof();
  }
  bytes_ += uint64_t(n);
  setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
  return traits_type::to_int_type(buffer_[0]);
}

}  // namespace hybrid::profiler::import
