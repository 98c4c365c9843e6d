// Our own checkpoints (DIR/latest, DIR/TAG/meta.json, DIR/TAG/partition_*.bin) as
// Engine::load_checkpoint and hybrid-ckpt read them. The input is meta.json, a
// separator line "\n@@partition@@\n", then partition_00000.bin; rank 1's file is
// the same bytes, so metas that name two ranks read two files. The ranges asked
// for are the engine's (a few elements, Adam's two state floats) and hybrid-ckpt's
// (everything param_count claims, capped, no state). The only error allowed is
// CheckpointError: read_checkpoint_meta validates every field the loaders read.
#include <algorithm>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "fuzz/checkpoint_input.h"
#include "fuzz/fuzz_support.h"

namespace {

void read_all(const std::string& dir) {
  using namespace hybrid::engine;
  const std::string tag = resolve_checkpoint_tag(dir, "");
  const nlohmann::json meta = read_checkpoint_meta(dir, tag);
  // What Engine::load_checkpoint reads from meta.json before the partitions.
  (void)meta.at("model").at("n_layer").get<int>();
  (void)meta.at("global_step").get<int64_t>();
  const int state_floats = meta.at("state_floats").get<int>();
  std::vector<float> master(64), state(64 * size_t(state_floats));
  read_checkpoint_range(dir, tag, meta, FlatRange{0, 64}, state_floats, master.data(),
                        state.data());
  const int64_t n = std::min<int64_t>(meta.at("param_count").get<int64_t>(), 4096);
  std::vector<float> flat(size_t(n) + 1);
  read_checkpoint_range(dir, tag, meta, FlatRange{0, n}, 0, flat.data(), nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto dir = hybrid::fuzz::scratch_dir() / "ckpt";
  hybrid::fuzz::unpack_checkpoint_input({reinterpret_cast<const char*>(data), size}, dir);
  try {
    read_all(dir.string());
  } catch (const hybrid::engine::CheckpointError& e) {
    hybrid::fuzz::expect_mentions(e, "checkpoint");
  }
  return 0;
}
