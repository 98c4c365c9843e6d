// llm.c token shards as the engine's data loader reads them: the memory-mapped
// shard (header, sizes), the vocabulary check, and the dataset that concatenates
// shards and reads them with wrap-around. The only error allowed is
// DataFileError naming the shard.
#include <vector>

#include "engine/data/data_file_error.h"
#include "engine/data/token_dataset.h"
#include "engine/data/token_shard.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hybrid::engine;
  const std::string path = hybrid::fuzz::write_input("shard_000000.bin", data, size);
  try {
    MappedTokenShard shard(path);
    shard.check_vocab(50257);
    const TokenDataset ds = TokenDataset::open(path, 50257);
    std::vector<int32_t> out(64);
    ds.copy_wrapped(ds.size() - 1, int64_t(out.size()), out.data());
    (void)ds.at(ds.size() / 2);
  } catch (const DataFileError& e) {
    hybrid::fuzz::expect_mentions(e, path);
  }
  return 0;
}
