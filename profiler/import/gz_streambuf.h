// Reading a file that may be gzip-compressed (Kineto writes .json.gz): a
// streambuf the JSON parser reads from.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <streambuf>
#include <string>
#include <vector>

namespace hybrid::profiler::import {

// A streambuf over zlib's gzFile, which reads gzip and plain files alike. Errors
// are kept (not thrown through the parser) and reported by the reader.
class GzStreamBuf : public std::streambuf {
 public:
  explicit GzStreamBuf(const std::string& path) : buffer_(size_t(1) << 20) {
    file_ = gzopen(path.c_str(), "rb");
    if (file_) gzbuffer(file_, 1 << 18);
  }
  ~GzStreamBuf() override {
    if (file_) gzclose(file_);
  }
  GzStreamBuf(const GzStreamBuf&) = delete;
  GzStreamBuf& operator=(const GzStreamBuf&) = delete;

  bool is_open() const { return file_ != nullptr; }
  bool compressed() const { return file_ && !gzdirect(file_); }
  uint64_t bytes_read() const { return bytes_; }
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override;

 private:
  gzFile file_ = nullptr;
  std::vector<char> buffer_;
  uint64_t bytes_ = 0;
  std::string error_;
};

}  // namespace hybrid::profiler::import
