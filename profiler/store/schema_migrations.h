// Migrations after version 7, one file each (schema_vN.cpp), so that
// schema.cpp, which lists them all, stays readable. Released SQL never changes.
#pragma once

namespace hybrid::profiler::store {

extern const char* const kSchemaV8;  // schema_v8.cpp: pipeline parallelism
extern const char* const kSchemaV9;  // schema_v9.cpp: run status diverged

}  // namespace hybrid::profiler::store
