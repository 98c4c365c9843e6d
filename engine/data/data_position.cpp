#include "engine/data/data_position.h"

#include <cstdint>
#include <limits>

#include "base/json_read.h"

namespace hybrid::engine {

void to_json(nlohmann::json& j, const DataPosition& pos) {
  j = nlohmann::json{{"epoch", pos.epoch}, {"step", pos.step}};
}

void from_json(const nlohmann::json& j, DataPosition& pos) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (!j.is_object()) base::json_fail("data_position", "data_position", "an object", j);
  for (const char* key : {"epoch", "step"})
    if (!j.contains(key)) base::json_fail("data_position", key, "present", nullptr);
  pos.epoch = base::json_integer(j.at("epoch"), "data_position", "epoch", 0, kMax);
  pos.step = base::json_integer(j.at("step"), "data_position", "step", 0, kMax);
}

}  // namespace hybrid::engine
