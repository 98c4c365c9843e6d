#include "profiler/import/kineto_trace.h"

#include <fmt/format.h>

#include <cmath>
#include <istream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "profiler/chrome_trace.h"
#include "profiler/import/gz_streambuf.h"

namespace hybrid::profiler::import {

namespace {

using json = nlohmann::json;

// Where the parser is: each open object/array pushes what it is.
enum class Ctx : uint8_t {
  top,
  events,      // traceEvents
  event,       // one entry of traceEvents
  args,        // its args
  dist_info,   // distributedInfo
  other_data,  // otherData (hybrid-prof's export names itself there)
  devices,     // deviceProperties
  device,      // one entry of deviceProperties
  skipped,     // anything else
};

// One traceEvents entry as far as the importer cares.
struct RawEvent {
  std::string ph, cat, name, pid, tid;
  std::optional<int64_t> ts_ns, dur_ns, correlation, stream, device;
  double ts_us = 0, dur_us = 0;
  uint64_t bytes = 0;
  void clear() { *this = RawEvent{}; }
};

constexpr const char* kOwnExport =
    "written by hybrid-prof export-trace (otherData.generator), not by the PyTorch profiler: its "
    "run is already in a store (hybrid-prof runs); import-kineto reads PyTorch profiler (Kineto) "
    "traces";

bool is_gpu_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

class TraceSax {
 public:
  explicit TraceSax(KinetoTrace& out) : out_(out) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t v) { return integer(v); }
  bool number_unsigned(json::number_unsigned_t v) {
    return integer(v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v));
  }
  bool number_float(json::number_float_t v, const std::string& text) {
    if (in(Ctx::event) && (key_ == "ts" || key_ == "dur")) {
      auto ns = parse_us_as_ns(text);
      if (!ns) {
        if (!std::isfinite(v)) fail(fmt::format("'{}' is not a finite number", key_));
        if (std::fabs(v) >= double(kMaxMicroseconds)) fail_out_of_range(text);
        ns = int64_t(std::llround(v * 1000.0));
      }
      (key_ == "ts" ? ev_.ts_ns : ev_.dur_ns) = *ns;
      (key_ == "ts" ? ev_.ts_us : ev_.dur_us) = v;
      return true;
    }
    if (std::isfinite(v) && std::fabs(v) < 9e18) return integer(int64_t(v), /*from_float=*/true);
    return true;
  }
  bool string(std::string& s) {
    if (in(Ctx::event)) {
      if (key_ == "ph")
        ev_.ph = std::move(s);
      else if (key_ == "cat")
        ev_.cat = std::move(s);
      else if (key_ == "name")
        ev_.name = std::move(s);
      else if (key_ == "pid")
        ev_.pid = std::move(s);
      else if (key_ == "tid")
        ev_.tid = std::move(s);
    } else if (in(Ctx::dist_info) && key_ == "backend") {
      out_.backend = std::move(s);
    } else if (in(Ctx::device) && key_ == "name") {
      device_name_ = std::move(s);
    } else if (in(Ctx::other_data) && key_ == "generator") {
      out_.generator = std::move(s);
      // Its events (categories such as "kernel" without Kineto's args) would
      // fail first: say what the file is as soon as it says so.
      if (out_.generator == kChromeTraceGenerator) fail(kOwnExport);
    } else if (in(Ctx::top) && key_ == "host_name") {
      out_.host = std::move(s);
    }
    return true;
  }
  bool binary(json::binary_t&) { return true; }

  bool start_object(size_t) {
    Ctx next = Ctx::skipped;
    if (stack_.empty())
      next = Ctx::top;
    else if (in(Ctx::events))
      next = Ctx::event, ev_.clear();
    else if (in(Ctx::event) && key_ == "args")
      next = Ctx::args;
    else if (in(Ctx::top) && key_ == "distributedInfo")
      next = Ctx::dist_info;
    else if (in(Ctx::top) && key_ == "otherData")
      next = Ctx::other_data;
    else if (in(Ctx::devices))
      next = Ctx::device, device_name_.clear();
    stack_.push_back(next);
    return true;
  }
  bool end_object() {
    const Ctx done = stack_.back();
    stack_.pop_back();
    if (done == Ctx::event) take_event();
    if (done == Ctx::device) out_.devices.push_back(device_name_);
    return true;
  }
  bool start_array(size_t) {
    Ctx next = Ctx::skipped;
    if (stack_.empty()) fail("the top level is an array, not a trace object with 'traceEvents'");
    if (in(Ctx::top) && key_ == "traceEvents")
      next = Ctx::events, saw_events_ = true;
    else if (in(Ctx::top) && key_ == "deviceProperties")
      next = Ctx::devices;
    stack_.push_back(next);
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    error_position_ = position;
    error_ = ex.what();
    return false;
  }

  bool saw_events() const { return saw_events_; }
  const std::string& error() const { return error_; }
  size_t error_position() const { return error_position_; }

 private:
  bool in(Ctx c) const { return !stack_.empty() && stack_.back() == c; }

  [[noreturn]] void fail(const std::string& what) const {
    throw ImportError(fmt::format("{}: {}", out_.path, what));
  }

  // Times are kept as int64 nanoseconds: microseconds beyond this (292 years)
  // would overflow.
  static constexpr int64_t kMaxMicroseconds = INT64_MAX / 1000;

  [[noreturn]] void fail_out_of_range(std::string_view value) const {
    fail(fmt::format("traceEvents[{}]: '{}' = {} us is out of range (at most {} us)", index_, key_,
                     value, kMaxMicroseconds));
  }

  int64_t microseconds_as_ns(int64_t us) const {
    if (us > kMaxMicroseconds || us < -kMaxMicroseconds) fail_out_of_range(std::to_string(us));
    return us * 1000;
  }

  bool integer(int64_t v, bool from_float = false) {
    if (in(Ctx::event)) {
      if (key_ == "ts")
        ev_.ts_ns = from_float ? v : microseconds_as_ns(v), ev_.ts_us = double(v);
      else if (key_ == "dur")
        ev_.dur_ns = from_float ? v : microseconds_as_ns(v), ev_.dur_us = double(v);
      else if (key_ == "pid")
        ev_.pid = std::to_string(v);
      else if (key_ == "tid")
        ev_.tid = std::to_string(v);
    } else if (in(Ctx::args)) {
      if (key_ == "correlation")
        ev_.correlation = v;
      else if (key_ == "stream")
        ev_.stream = v;
      else if (key_ == "device")
        ev_.device = v;
      else if (key_ == "bytes")
        ev_.bytes = uint64_t(std::max<int64_t>(v, 0));
    } else if (in(Ctx::dist_info)) {
      if (key_ == "rank")
        out_.rank = int(v);
      else if (key_ == "world_size")
        out_.world_size = int(v);
    } else if (in(Ctx::top) && key_ == "baseTimeNanoseconds") {
      out_.base_time_ns = v;
    }
    return true;
  }

  uint32_t intern(std::string& s, std::vector<std::string>& table,
                  std::unordered_map<std::string, uint32_t>& index) {
    auto [it, fresh] = index.try_emplace(s, uint32_t(table.size()));
    if (fresh) table.push_back(std::move(s));
    return it->second;
  }

  void require(bool present, std::string_view field) const {
    if (!present)
      fail(fmt::format("traceEvents[{}] ('{}' event '{}', cat '{}') has no '{}'", index_ - 1,
                       ev_.ph, ev_.name, ev_.cat, field));
  }

  void take_event() {
    ++index_;
    ++out_.events_read;
    if (ev_.ph != "X") return;  // metadata, flows, instants: not timed work
    require(!ev_.name.empty(), "name");
    require(ev_.ts_ns.has_value(), "ts");
    require(ev_.dur_ns.has_value(), "dur");
    if (*ev_.dur_ns < 0)
      fail(fmt::format("traceEvents[{}] ('{}') has a negative 'dur'", index_ - 1, ev_.name));
    const int64_t start = *ev_.ts_ns, end = start + *ev_.dur_ns;
    if (is_gpu_category(ev_.cat)) {
      require(ev_.stream.has_value(), "args.stream");
      KinetoGpuRecord r;
      r.category = ev_.cat == "kernel" ? Category::kernel : Category::memcpy;
      r.name = intern(ev_.name, out_.names, name_index_);
      r.device = ev_.device.value_or(0);
      r.stream = *ev_.stream;
      r.start_ns = start;
      r.end_ns = end;
      r.correlation = ev_.correlation;
      r.bytes = ev_.bytes;
      r.ts_us = ev_.ts_us;
      r.dur_us = ev_.dur_us;
      out_.gpu.push_back(r);
      return;
    }
    const bool step = ev_.name.starts_with("ProfilerStep#");
    const bool scope = ev_.cat == "user_annotation" || ev_.cat == "python_function";
    const bool autograd =
        ev_.cat == "cpu_op" && ev_.name.starts_with("autograd::engine::evaluate_function");
    if (!ev_.correlation && !step && !scope && !autograd) return;
    if (out_.pid == 0 && ev_.correlation) out_.pid = std::atoll(ev_.pid.c_str());
    std::string thread = ev_.pid + "/" + ev_.tid;
    KinetoCpuSpan s;
    s.thread = intern(thread, out_.threads, thread_index_);
    s.start_ns = start;
    s.end_ns = end;
    if (ev_.correlation) {
      s.correlation = ev_.correlation;
      out_.launches.push_back(s);  // names of launches are not kept: not shown
      return;
    }
    s.name = intern(ev_.name, out_.names, name_index_);
    if (step)
      out_.steps.push_back(s);
    else if (scope)
      out_.scopes.push_back(s);
    else
      out_.autograd.push_back(s);
  }

  KinetoTrace& out_;
  std::vector<Ctx> stack_;
  std::string key_;
  RawEvent ev_;
  std::string device_name_;
  std::unordered_map<std::string, uint32_t> name_index_, thread_index_;
  uint64_t index_ = 0;
  bool saw_events_ = false;
  std::string error_;
  size_t error_position_ = 0;
};

}  // namespace

std::optional<int64_t> parse_us_as_ns(std::string_view t) {
  size_t i = 0;
  const bool negative = i < t.size() && t[i] == '-';
  if (negative) ++i;
  int64_t whole = 0;
  size_t digits = 0;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
    if (whole > (INT64_MAX / 1000 - 9) / 10) return std::nullopt;
    whole = whole * 10 + (t[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  int64_t frac = 0;
  int scale = 100;
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    for (size_t k = 0; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++k) {
      if (k < 3)
        frac += (t[i] - '0') * scale, scale /= 10;
      else if (k == 3)
        round_up = t[i] >= '5';
    }
  }
  if (i != t.size()) return std::nullopt;  // an exponent: not plain decimal
  const int64_t ns = whole * 1000 + frac + (round_up ? 1 : 0);
  return negative ? -ns : ns;
}

namespace {

// A trace that parses but holds nothing to analyse would become an "ok" run of
// 0 ms; our own export would become a second, emptied copy of a stored run.
void refuse_unusable(const KinetoTrace& t) {
  if (t.generator == kChromeTraceGenerator)
    throw ImportError(fmt::format("{}: {}", t.path, kOwnExport));
  if (t.gpu.empty() && t.launches.empty() && t.scopes.empty() && t.autograd.empty() &&
      t.steps.empty())
    throw ImportError(fmt::format(
        "{}: nothing to import: none of its {} traceEvents is a GPU kernel, memcpy or memset, a "
        "CPU launch, a user annotation or a ProfilerStep",
        t.path, t.events_read));
}

}  // namespace

KinetoTrace read_kineto_trace(const std::filesystem::path& path) {
  KinetoTrace out;
  out.path = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ImportError(fmt::format(
        "{}: is a directory; give the trace files themselves (one .json or .json.gz per rank, "
        "e.g. {}/*.json)",
        out.path, out.path));
  if (!std::filesystem::is_regular_file(path, ec))
    throw ImportError(fmt::format("{}: no such file", out.path));
  if (std::filesystem::file_size(path, ec) == 0)
    throw ImportError(fmt::format("{}: the file is empty", out.path));
  GzStreamBuf buf(out.path);
  if (!buf.is_open()) throw ImportError(fmt::format("{}: cannot open the file", out.path));
  std::istream in(&buf);
  TraceSax sax(out);
  const bool ok = json::sax_parse(in, &sax, json::input_format_t::json, /*strict=*/true);
  if (!buf.error().empty()) throw ImportError(fmt::format("{}: {}", out.path, buf.error()));
  if (!ok) {
    const bool at_end = sax.error().find("unexpected end of input") != std::string::npos;
    throw ImportError(fmt::format("{}: {} JSON at byte {} of the {}text: {}", out.path,
                                  at_end ? "truncated" : "malformed", sax.error_position(),
                                  buf.compressed() ? "decompressed " : "", sax.error()));
  }
  if (!sax.saw_events())
    throw ImportError(
        fmt::format("{}: no 'traceEvents' array: not a PyTorch profiler (Kineto) trace", out.path));
  refuse_unusable(out);
  return out;
}

}  // namespace hybrid::profiler::import
