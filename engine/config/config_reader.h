// Internal to engine/config: typed, path-aware reads from one JSON object of a
// ds_config.json. Every key read is remembered; finish() reports the others as
// ignored (dotted paths). Absent keys, null and the string "auto" all read as
// "not given", so a Hugging Face style config with "auto" values falls back to
// DeepSpeed's defaults.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"

namespace hybrid::engine::config_detail {

// Throws ConfigError "config: <key> must be <what>, got <value>".
[[noreturn]] void fail(std::string_view key, std::string_view what, const nlohmann::json& got);

// True for null and the string "auto": both mean "use the default".
bool is_unset(const nlohmann::json& v);

class ObjectReader {
 public:
  // obj must be a JSON object; path is its dotted path ("" for the top level).
  ObjectReader(const nlohmann::json& obj, std::string path, std::vector<std::string>& ignored);

  std::string key_path(std::string_view key) const;

  // The raw value (marked as read), or nullptr when absent, null or "auto".
  const nlohmann::json* get(std::string_view key);
  // Marks a key as read without interpreting it (handled elsewhere).
  void accept(std::string_view key) { known_.insert(std::string(key)); }

  std::optional<bool> boolean(std::string_view key);
  // Integers accept integral floating-point JSON numbers too (5e8).
  // `what` overrides the range description in the error message.
  std::optional<int64_t> integer(std::string_view key,
                                 int64_t lo = std::numeric_limits<int64_t>::min(),
                                 int64_t hi = std::numeric_limits<int64_t>::max(),
                                 std::string_view what = {});
  // Finite numbers; lo_open excludes lo itself.
  std::optional<double> number(std::string_view key,
                               double lo = -std::numeric_limits<double>::max(),
                               double hi = std::numeric_limits<double>::max(), bool lo_open = false,
                               std::string_view what = {});
  std::optional<std::string> string(std::string_view key);
  // One of `choices` (exact spelling); the error lists them.
  std::optional<std::string> choice(std::string_view key, const std::vector<std::string>& choices);
  // One of an enum's values, spelled as to_string() writes them; the error lists them.
  template <class E, size_t N>
  std::optional<E> choice(std::string_view key, const std::array<E, N>& values) {
    std::vector<std::string> names;
    for (E e : values) names.emplace_back(to_string(e));
    const auto spelled = choice(key, names);
    if (spelled)
      for (E e : values)
        if (to_string(e) == *spelled) return e;
    return std::nullopt;
  }
  // A nested object, or nullptr when absent/null; any other type is an error.
  const nlohmann::json* object(std::string_view key);

  // Appends the keys never read to the ignored list.
  void finish();

 private:
  const nlohmann::json& obj_;
  std::string path_;
  std::vector<std::string>& ignored_;
  std::set<std::string, std::less<>> known_;
};

// Converts an integral JSON number to int64 or fails with key/what.
int64_t to_integer(const nlohmann::json& v, std::string_view key, std::string_view what);

// The batch sizes, given and derived (config_batch.cpp).
void resolve_batch(ObjectReader& top, int world_size, Config& c);

// The optimizer and scheduler blocks (config_optim.cpp).
void parse_optimizer(const nlohmann::json& block, Config& c);
void parse_scheduler(const nlohmann::json& block, Config& c);
// OneBitAdam's refusals, once the whole config is known.
void check_onebit(const Config& c);

// The "hybrid" block (config_hybrid.cpp).
void parse_hybrid_block(const nlohmann::json& block, Config& c);

// Documents as units (config_documents.cpp): hybrid.data's packing keys, read
// from its object; DeepSpeed's data_efficiency block; the checks once the
// batch shape is known.
void parse_documents(ObjectReader& data, Config& c);
void parse_data_efficiency(const nlohmann::json& block, Config& c);
void check_documents(const Config& c);

// DeepSpeed's hybrid_engine block (config_hybrid_engine.cpp).
void parse_hybrid_engine(const nlohmann::json& block, Config& c);
void parse_rollout(const nlohmann::json& block, Config& c);  // hybrid.rollout
// Once the model is known: hybrid_engine.inference_tp_size against the world
// and the model's shapes.
void check_inference_tp(const Config& c, int world_size);
// `tp` (the value of `key`) splits the model's heads, MLP and padded vocabulary evenly.
void check_tensor_split(const Config& c, int tp, std::string_view key);

// Activation checkpointing (config_checkpointing.cpp): DeepSpeed's block, ours
// (hybrid.activation_checkpointing), and the policy resolved once the model
// depth is known (after the hybrid block).
void parse_activation_checkpointing(const nlohmann::json& block, Config& c);
void parse_hybrid_checkpointing(const nlohmann::json& block, Config& c);
void resolve_activation_checkpointing(bool deepspeed_block, Config& c);

}  // namespace hybrid::engine::config_detail
