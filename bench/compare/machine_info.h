// The machine a benchmark run happened on, recorded in the run's JSON so a
// surprising comparison can be explained (other CPU, AVX-512 or not, another
// OPENBLAS_CORETYPE, a dirty tree).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::bench {

// cpu_model, logical_cpus, cpu_flags, avx512, openblas_coretype, omp_num_threads,
// hostname, kernel, date (UTC, ISO 8601), load_average, git_revision, git_dirty.
// `source_dir` is the git checkout whose revision is recorded (may not exist).
nlohmann::json describe_machine(const std::filesystem::path& source_dir);

// Current UTC time as "2025-01-31T12:34:56Z".
std::string utc_timestamp();

}  // namespace hybrid::bench
