#include "base/json_text.h"

#include <set>
#include <vector>

#include "base/json_read.h"

namespace hybrid::base {

namespace {

using json = nlohmann::json;

// Follows the parser's objects and arrays and remembers the first key that an
// object already holds, as the dotted path of object keys that leads to it.
struct DuplicateKeyCheck {
  struct Frame {
    bool object = true;
    std::set<std::string> keys;
    std::string key;
  };
  std::vector<Frame> stack;
  std::string duplicate;

  bool operator()(int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        stack.push_back({true, {}, {}});
        break;
      case json::parse_event_t::array_start:
        stack.push_back({false, {}, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key:
        if (!stack.empty()) {
          Frame& f = stack.back();
          f.key = parsed.get<std::string>();
          if (!f.keys.insert(f.key).second && duplicate.empty()) {
            for (const Frame& fr : stack)
              if (fr.object) duplicate += (duplicate.empty() ? "" : ".") + fr.key;
          }
        }
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  }
};

}  // namespace

json parse_json_text(const std::string& text) {
  json j;
  DuplicateKeyCheck dup;
  try {
    j = json::parse(text, std::ref(dup), /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // parse_error, or out_of_range: a number like 1e999
    throw JsonTextError("invalid JSON: " + json_error_text(e));
  }
  if (!dup.duplicate.empty()) throw JsonTextError("duplicate key " + dup.duplicate);
  return j;
}

}  // namespace hybrid::base
