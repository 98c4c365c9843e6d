// The keyword arguments each optimizer type accepts under optimizer.params
// (DeepSpeed's), by canonical type name ("AdamW", "OneBitAdam", ...). The config
// refuses a parameter of another type (engine/config/config_optim.cpp); the
// autotuner's optimizer axis translates params between types with it
// (autotune/optimizer_axis.h).
#pragma once

#include <map>
#include <set>
#include <string>

namespace hybrid::engine {

const std::map<std::string, std::set<std::string>>& optimizer_param_table();

}  // namespace hybrid::engine
