// Validation of a checkpoint's meta.json: every field a loader reads (the engine,
// hybrid-ckpt) has the type and range it needs, so that a corrupt or hand-edited
// file fails here with a CheckpointError naming the field, not later inside the
// JSON library or with a size taken from the file.
#include <fmt/format.h>

#include "engine/checkpoint/checkpoint.h"

namespace hybrid::engine {

namespace {

// Partition boundaries and counts beyond this are not a model (2^40 parameters).
constexpr int64_t kMaxParams = int64_t(1) << 40;

void fail(const std::string& where, const std::string& what) {
  throw CheckpointError(fmt::format("checkpoint {}: meta.json: {}", where, what));
}

int64_t integer(const nlohmann::json& obj, const char* key, int64_t lo, int64_t hi,
                const std::string& where, const std::string& prefix = "") {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(where, fmt::format("{}{} is missing", prefix, key));
  if (!it->is_number_integer())
    fail(where, fmt::format("{}{} must be an integer, got {}", prefix, key, it->dump()));
  // An unsigned value above INT64_MAX reads as negative here and fails the range.
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi || (it->is_number_unsigned() && v < 0))
    fail(where, fmt::format("{}{} is {}, expected {}..{}", prefix, key, it->dump(), lo, hi));
  return v;
}

void string_field(const nlohmann::json& obj, const char* key, const std::string& where,
                  const std::string& prefix = "") {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string())
    fail(where, fmt::format("{}{} must be a string", prefix, key));
}

void check_partitions(const nlohmann::json& meta, const std::string& where) {
  // Tensor parallelism: each partition names the rank whose pieces it holds.
  const int64_t tp =
      meta.contains("tensor_parallel") ? integer(meta, "tensor_parallel", 1, 1 << 16, where) : 1;
  const int64_t pp =
      meta.contains("pipeline_stages") ? integer(meta, "pipeline_stages", 1, 1 << 16, where) : 1;
  if (meta.contains("pipeline_partition")) string_field(meta, "pipeline_partition", where);
  const auto it = meta.find("partitions");
  if (it == meta.end() || !it->is_array() || it->empty())
    fail(where, "partitions must be a non-empty array");
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& p = (*it)[i];
    const std::string prefix = fmt::format("partitions[{}].", i);
    if (!p.is_object()) fail(where, fmt::format("partitions[{}] must be an object", i));
    integer(p, "rank", 0, 1 << 20, where, prefix);
    if (p.contains("tp")) integer(p, "tp", 0, tp - 1, where, prefix);
    if (p.contains("pp")) integer(p, "pp", 0, pp - 1, where, prefix);
    const int64_t begin = integer(p, "begin", 0, kMaxParams, where, prefix);
    integer(p, "end", begin, kMaxParams, where, prefix);
  }
}

// LossScaler::state(): what LossScaler::load_state reads back under fp16.
void check_loss_scaler(const nlohmann::json& meta, const std::string& where) {
  const auto s = meta.find("loss_scaler");
  if (s == meta.end()) return;
  if (!s->is_object()) fail(where, "loss_scaler must be an object");
  const auto dynamic = s->find("dynamic");
  if (dynamic == s->end() || !dynamic->is_boolean())
    fail(where, "loss_scaler.dynamic must be true or false");
  const auto scale = s->find("cur_scale");
  if (scale == s->end() || !scale->is_number() || !(scale->get<double>() > 0))
    fail(where, "loss_scaler.cur_scale must be a positive number");
  integer(*s, "cur_hysteresis", 0, INT32_MAX, where, "loss_scaler.");
  integer(*s, "cur_iter", INT64_MIN, INT64_MAX, where, "loss_scaler.");
  integer(*s, "last_overflow_iter", INT64_MIN, INT64_MAX, where, "loss_scaler.");
}

}  // namespace

void validate_checkpoint_meta(const nlohmann::json& meta, const std::string& where) {
  const auto format = meta.is_object() ? meta.find("format") : meta.end();
  if (format == meta.end() || !format->is_string() || *format != "hybrid-checkpoint")
    throw CheckpointError(
        fmt::format("checkpoint {}: meta.json is not a hybrid checkpoint", where));
  integer(meta, "param_count", 0, kMaxParams, where);
  integer(meta, "state_floats", 0, kMaxStateFloats, where);
  integer(meta, "world_size", 1, 1 << 20, where);
  for (const char* key : {"global_step", "applied_steps", "skipped_steps"})
    integer(meta, key, 0, INT64_MAX, where);
  string_field(meta, "optimizer", where);
  const auto m = meta.find("model");
  if (m == meta.end() || !m->is_object()) fail(where, "model must be an object");
  for (const char* key :
       {"n_layer", "n_embd", "n_head", "vocab_size", "padded_vocab_size", "seq_len"})
    integer(*m, key, 1, INT32_MAX, where, "model.");
  string_field(*m, "type", where, "model.");
  if (meta.contains("lineage")) string_field(meta, "lineage", where);
  check_loss_scaler(meta, where);
  check_partitions(meta, where);
}

}  // namespace hybrid::engine
