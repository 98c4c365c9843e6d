#include "bench/suite_main.h"

#include <cstdio>

#include "base/text.h"

namespace hybrid::bench {

int run_suite(int argc, char** argv, const SuiteSteps& steps) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (steps.before)
    if (const std::optional<int> rc = steps.before()) return *rc;
  if (steps.report) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  if (steps.summary) steps.summary();
  benchmark::Shutdown();
  return 0;
}

int run_suite(int argc, char** argv, const std::function<void()>& summary) {
  SuiteSteps steps;
  steps.summary = summary;
  return run_suite(argc, argv, steps);
}

SuiteArgs::SuiteArgs(int argc, char** argv, std::initializer_list<std::string_view> own_flags) {
  if (argc > 0) rest_.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    bool own = false;
    for (std::string_view flag : own_flags) own = own || a == flag;
    if (own && i + 1 < argc)
      values_[std::string(a)] = argv[++i];
    else
      rest_.push_back(argv[i]);
  }
  rest_.push_back(nullptr);
}

const std::string* SuiteArgs::value(std::string_view flag) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<int> whole_number_flag(const char* suite, const char* flag, const std::string& text,
                                     int lo, int hi) {
  const std::optional<long long> v = base::parse_int(text);
  if (v && *v >= lo && *v <= hi) return int(*v);
  std::fprintf(stderr, "%s: %s wants a whole number from %d to %d, got '%s'\n", suite, flag, lo, hi,
               text.c_str());
  return std::nullopt;
}

}  // namespace hybrid::bench
