#include "profiler/report_generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "profiler/report_format.h"

namespace hybrid::profiler {

namespace {

const RunInfo* run_of(const std::vector<RunInfo>& runs, int64_t id) {
  const auto it =
      std::find_if(runs.begin(), runs.end(), [&](const RunInfo& r) { return r.id == id; });
  return it == runs.end() ? nullptr : &*it;
}

std::string ms(double v) { return fmt::format("{:.3f}", v); }
std::string ms(const std::optional<double>& v) { return v ? ms(*v) : "-"; }

// p50, p90, p99 cells, "-" for a row without the measurement.
void add_percentiles(std::vector<std::string>& cells, const std::optional<LatencyPercentiles>& p) {
  for (const auto member :
       {&LatencyPercentiles::p50, &LatencyPercentiles::p90, &LatencyPercentiles::p99})
    cells.push_back(p ? ms((*p).*member) : "-");
}

std::string rate(const GenerationRow& r) {
  return r.tokens_per_s_sd ? fmt::format("{:.2f} ± {:.2f}", r.tokens_per_s, *r.tokens_per_s_sd)
                           : fmt::format("{:.2f}", r.tokens_per_s);
}

bool has_breakdown(const GenerationRow& r) {
  return r.step || r.e2e_ms || r.gather_ms || r.generate_ms || r.train_ms || r.other_ms ||
         r.samples_per_s;
}

std::string figures_table(const std::vector<RunInfo>& runs,
                          const std::vector<GenerationRow>& rows) {
  report::TextTable table(
      {"run", "name", "kind", "test", "model", "dtype", "batch", "prompts", "new tokens",
       "ttft p50", "p90", "p99", "tpot p50", "p90", "p99", "tokens/s"},
      6);
  for (const auto& r : rows) {
    const RunInfo* run = run_of(runs, r.run_id);
    std::vector<std::string> cells = {std::to_string(r.run_id),
                                      run ? run->name : "",
                                      std::string(to_string(r.kind)),
                                      r.test.empty() ? "-" : r.test,
                                      r.model,
                                      r.dtype,
                                      std::to_string(r.batch),
                                      std::to_string(r.prompts),
                                      std::to_string(r.new_tokens)};
    add_percentiles(cells, r.ttft_ms);
    add_percentiles(cells, r.tpot_ms);
    cells.push_back(rate(r));
    table.add_row(std::move(cells));
  }
  return table.render("  ");
}

std::string breakdown_table(const std::vector<GenerationRow>& rows) {
  report::TextTable table(
      {"run", "step", "e2e", "gather", "generate", "train", "other", "samples/s"}, 0);
  for (const auto& r : rows)
    if (has_breakdown(r))
      table.add_row({std::to_string(r.run_id), r.step ? std::to_string(*r.step) : "-", ms(r.e2e_ms),
                     ms(r.gather_ms), ms(r.generate_ms), ms(r.train_ms), ms(r.other_ms),
                     r.samples_per_s ? fmt::format("{:.2f}", *r.samples_per_s) : std::string("-")});
  return table.rows() ? report::section("rollout breakdown (ms per step)") + table.render("  ")
                      : "";
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json percentiles_json(const std::optional<LatencyPercentiles>& p) {
  return p ? nlohmann::json{{"p50", p->p50}, {"p90", p->p90}, {"p99", p->p99}}
           : nlohmann::json(nullptr);
}

}  // namespace

std::string generation_report(const std::vector<RunInfo>& runs,
                              const std::vector<GenerationRow>& rows) {
  std::string out = report::section("hybrid generation");
  if (rows.empty()) return out + "no generation rows recorded\n";
  out += fmt::format(
      "{} generation row(s); times in ms: ttft to a prompt's first token, tpot per "
      "decode step\n",
      rows.size());
  return out + figures_table(runs, rows) + breakdown_table(rows);
}

nlohmann::json generation_report_json(const std::vector<RunInfo>& runs,
                                      const std::vector<GenerationRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    const RunInfo* run = run_of(runs, r.run_id);
    list.push_back({{"id", r.id},
                    {"run_id", r.run_id},
                    {"run_name", run ? run->name : ""},
                    {"kind", to_string(r.kind)},
                    {"test", r.test},
                    {"model", r.model},
                    {"dtype", r.dtype},
                    {"batch", r.batch},
                    {"prompts", r.prompts},
                    {"prompt_tokens", r.prompt_tokens},
                    {"new_tokens", r.new_tokens},
                    {"repetitions", r.repetitions},
                    {"ttft_ms", percentiles_json(r.ttft_ms)},
                    {"tpot_ms", percentiles_json(r.tpot_ms)},
                    {"tokens_per_s", r.tokens_per_s},
                    {"tokens_per_s_sd", optional_json(r.tokens_per_s_sd)},
                    {"e2e_ms", optional_json(r.e2e_ms)},
                    {"gather_ms", optional_json(r.gather_ms)},
                    {"generate_ms", optional_json(r.generate_ms)},
                    {"train_ms", optional_json(r.train_ms)},
                    {"other_ms", optional_json(r.other_ms)},
                    {"samples_per_s", optional_json(r.samples_per_s)},
                    {"step", r.step ? nlohmann::json(*r.step) : nlohmann::json(nullptr)}});
  }
  return {{"generations", list}};
}

}  // namespace hybrid::profiler
