// Where a document loader stands: the epoch, and the global steps done within
// it. Saved in checkpoints ({"epoch": e, "step": s}) so that a resumed run
// reads exactly what an uninterrupted one would.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace hybrid::engine {

struct DataPosition {
  int64_t epoch = 0;
  int64_t step = 0;  // global steps already taken in this epoch

  // The position after one more step in an epoch of `steps_in_epoch` steps:
  // the next epoch's step 0 after its last step.
  DataPosition next(int64_t steps_in_epoch) const {
    return step + 1 >= steps_in_epoch ? DataPosition{epoch + 1, 0} : DataPosition{epoch, step + 1};
  }
  bool operator==(const DataPosition&) const = default;
};

// nlohmann's conversions: `nlohmann::json j = pos;` and `j.get<DataPosition>()`.
// Reading throws base::JsonReadError "data_position: <key> must be ..., got ..."
// when epoch or step is missing, not an integer, or negative.
void to_json(nlohmann::json& j, const DataPosition& pos);
void from_json(const nlohmann::json& j, DataPosition& pos);

}  // namespace hybrid::engine
