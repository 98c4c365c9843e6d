// The SQL of each migration, one file each (schema_vN.cpp), so that schema.cpp,
// which lists them in order, stays readable. Released SQL never changes: what
// SQLite keeps of it (sqlite_schema.sql) must stay the same byte for byte,
// including the text of migrations built from shared pieces.
#pragma once

#include <string>
#include <string_view>

namespace hybrid::profiler::store {

extern const char* const kSchemaV1;   // runs and everything a training run writes
extern const char* const kSchemaV2;   // the autotuner's tables
extern const char* const kSchemaV3;   // the GPU timeline
extern const char* const kSchemaV4;   // wall-clock step timers, recomputation
extern const char* const kSchemaV5;   // noise in the tuner
std::string schema_v6();              // runs across hosts
extern const char* const kSchemaV7;   // predictions past the measured world
extern const char* const kSchemaV8;   // pipeline parallelism
std::string schema_v9();              // run status diverged
extern const char* const kSchemaV10;  // generation runs

// `trials` rebuilt as trials_v<version> with its v5 columns, its status CHECK
// allowing v6's statuses followed by `more_statuses` (v6 and v9 both rebuild it).
std::string rebuild_trials(int version, std::string_view more_statuses);

}  // namespace hybrid::profiler::store
