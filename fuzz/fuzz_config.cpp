// ds_config.json as hybrid-train and hybrid-tune read it: load_config (JSON with
// comments, duplicate keys refused, every DeepSpeed key and the hybrid block
// validated, "auto" and the batch triad resolved). The only error allowed is
// ConfigError ("config: ..."). The world size varies with the input's length so
// that the batch triad is resolved for 1 to 4 ranks.
#include "engine/config/config.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = hybrid::fuzz::write_input("ds_config.json", data, size);
  try {
    const auto cfg = hybrid::engine::load_config(path, 1 + int(size % 4));
    (void)cfg.padded_vocab();
  } catch (const hybrid::engine::ConfigError& e) {
    hybrid::fuzz::expect_mentions(e, "config: ");
  }
  return 0;
}
