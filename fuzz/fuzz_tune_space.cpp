// hybrid-tune's own inputs: the search space file (--space) and the ds_config's
// "autotuning" block (read from the same bytes when they are a JSON object). The
// only error allowed is TuneError.
#include <fstream>

#include "autotune/autotuning_options.h"
#include "autotune/space.h"
#include "autotune/tune_error.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hybrid::autotune;
  const std::string path = hybrid::fuzz::write_input("space.json", data, size);
  try {
    const SearchSpace space = load_space(path);
    (void)space.grid_size();
    (void)space.to_json().dump();
  } catch (const TuneError& e) {
    hybrid::fuzz::expect_mentions(e, "space");
  }
  const auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    (void)parse_autotuning(j);
  } catch (const TuneError& e) {
    hybrid::fuzz::expect_mentions(e, "autotuning");
  }
  return 0;
}
