// Units: what one training sequence holds. A document of L tokens (its leading
// separator included) is one unit when L <= T (the sequence length). A longer
// one is cut into pieces of T tokens, the last holding the rest, each its own
// unit whose positions restart at 0: a piece after the first sees none of the
// tokens before it (the price of a fixed sequence length; pieces are never
// dropped, so every token is trained on).
//
// A unit's inputs are its tokens; its targets are the stream's next tokens, so
// the last target of a document's last unit is the next document's separator,
// and at the stream's end the target wraps to position 0 (as
// TokenDataset::copy_wrapped does).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/data/document_index.h"
#include "engine/data/token_dataset.h"

namespace hybrid::engine {

struct DocumentUnit {
  int64_t start = 0;     // stream position of its first token
  int64_t document = 0;  // the document it comes from (DocumentIndex's numbering)
  int32_t length = 0;    // tokens, 1..T
};

// ceil(length / seq_len): the units of a document of `length` tokens.
inline int64_t unit_count(int64_t length, int seq_len) { return (length + seq_len - 1) / seq_len; }

// Appends document d's units to `out`, in stream order.
void append_units(const DocumentIndex& index, int64_t d, int seq_len,
                  std::vector<DocumentUnit>& out);

// Writes the unit's inputs and targets (unit.length tokens each).
void copy_unit(const TokenDataset& data, const DocumentUnit& unit, int32_t* inputs,
               int32_t* targets);

}  // namespace hybrid::engine
