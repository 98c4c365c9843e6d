#include "autotune/hostfile.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "autotune/tune_error.h"

namespace hybrid::autotune {

namespace {

int positive(const std::string& text, const std::string& where) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1)
    throw TuneError(fmt::format("{}: '{}' is not a positive whole number", where, text));
  return v;
}

}  // namespace

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TuneError(fmt::format("hostfile {}: cannot be read", path));
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    HostSlots h;
    if (!(words >> h.host)) continue;
    const std::string where = fmt::format("hostfile {}:{}", path, n);
    for (std::string w; words >> w;) {
      const auto eq = w.find('=');
      const std::string key = w.substr(0, eq), value = eq == w.npos ? "" : w.substr(eq + 1);
      if (key == "slots" || key == "slot")
        h.slots = positive(value, where + " slots");
      else if (key == "max_slots" || key == "max-slots")
        positive(value, where + " max_slots");
      else
        throw TuneError(
            fmt::format("{}: unknown '{}' (a line is: NAME [slots=N] [max_slots=N])", where, w));
    }
    if (!seen.insert(h.host).second)
      throw TuneError(fmt::format("{}: host {} is listed twice", where, h.host));
    hosts.push_back(std::move(h));
  }
  if (hosts.empty()) throw TuneError(fmt::format("hostfile {}: names no host", path));
  return hosts;
}

int total_slots(const std::vector<HostSlots>& hosts) {
  int n = 0;
  for (const auto& h : hosts) n += h.slots;
  return n;
}

}  // namespace hybrid::autotune
