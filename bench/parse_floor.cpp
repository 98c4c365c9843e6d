#include "bench/parse_floor.h"

#include <benchmark/benchmark.h>
#include <zlib.h>

#include <istream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace hybrid::bench {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The importer's reading path (profiler/import/kineto_trace.cpp: zlib's gzread,
// which reads plain files too, 1 MiB at a time, under a std::istream), so the
// floor pays for reading exactly what the importer pays.
class GzStreamBuf : public std::streambuf {
 public:
  explicit GzStreamBuf(const fs::path& path) : buffer_(size_t(1) << 20) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw std::runtime_error("cannot open " + path.string());
    gzbuffer(file_, 1 << 18);
  }
  ~GzStreamBuf() override { gzclose(file_); }
  GzStreamBuf(const GzStreamBuf&) = delete;
  GzStreamBuf& operator=(const GzStreamBuf&) = delete;

 protected:
  int_type underflow() override {
    const int n = gzread(file_, buffer_.data(), unsigned(buffer_.size()));
    if (n <= 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(buffer_[0]);
  }

 private:
  gzFile file_ = nullptr;
  std::vector<char> buffer_;
};

// A SAX handler that keeps nothing: what parsing alone costs.
struct NoopSax {
  uint64_t objects = 0;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(size_t) { return ++objects, true; }
  bool end_object() { return true; }
  bool start_array(size_t) { return true; }
  bool end_array() { return true; }
  bool key(std::string&) { return true; }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw std::runtime_error(e.what());
  }
};

}  // namespace

void read_bytes(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path.string());
  gzbuffer(f, 1 << 18);
  std::vector<char> buffer(size_t(1) << 20);
  uint64_t total = 0;
  for (int n; (n = gzread(f, buffer.data(), unsigned(buffer.size()))) > 0;) total += uint64_t(n);
  gzclose(f);
  benchmark::DoNotOptimize(total);
}

void sax_noop(const fs::path& path) {
  GzStreamBuf buf(path);
  std::istream in(&buf);
  NoopSax sax;
  if (!json::sax_parse(in, &sax, json::input_format_t::json, /*strict=*/true))
    throw std::runtime_error("SAX parse failed");
  benchmark::DoNotOptimize(sax.objects);
}

uint64_t dom_parse(const fs::path& path) {
  GzStreamBuf buf(path);
  std::istream in(&buf);
  const json doc = json::parse(in);
  return doc.at("traceEvents").size();
}

}  // namespace hybrid::bench
