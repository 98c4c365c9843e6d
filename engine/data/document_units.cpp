#include "engine/data/document_units.h"

#include <algorithm>

namespace hybrid::engine {

void append_units(const DocumentIndex& index, int64_t d, int seq_len,
                  std::vector<DocumentUnit>& out) {
  const int64_t end = index.end(d);
  for (int64_t at = index.start(d); at < end; at += seq_len)
    out.push_back({at, d, int32_t(std::min<int64_t>(seq_len, end - at))});
}

void copy_unit(const TokenDataset& data, const DocumentUnit& unit, int32_t* inputs,
               int32_t* targets) {
  data.copy_wrapped(unit.start, unit.length, inputs);
  data.copy_wrapped(unit.start + 1, unit.length, targets);
}

}  // namespace hybrid::engine
