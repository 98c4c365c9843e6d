// Our own top-level "hybrid" block of ds_config.json (model, data, device,
// memory budget, seed, threads, profiler) and byte-size parsing.
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>

#include "engine/config/config.h"
#include "engine/config/config_reader.h"
#include "engine/data/data_file_error.h"
#include "engine/model/families.h"
#include "engine/model/hf_directory.h"

namespace hybrid::engine {

using config_detail::fail;
using config_detail::ObjectReader;
using nlohmann::json;

uint64_t parse_byte_size(const json& v, const std::string& key) {
  const char* what = "a size such as \"8GiB\", \"512MiB\", \"1.5GB\" or a number of bytes";
  if (v.is_number()) {
    const int64_t n = config_detail::to_integer(v, key, what);
    if (n < 0) fail(key, what, v);
    return uint64_t(n);
  }
  if (!v.is_string()) fail(key, what, v);
  const std::string& s = v.get_ref<const std::string&>();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  double value = 0.0;
  const auto [end, ec] = std::from_chars(s.data() + i, s.data() + s.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0.0) fail(key, what, v);
  i = size_t(end - s.data());
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  size_t j = s.size();
  while (j > i && std::isspace(static_cast<unsigned char>(s[j - 1]))) --j;
  std::string unit = s.substr(i, j - i);
  for (auto& ch : unit) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  // Decimal units are powers of 1000 (GB), binary ones powers of 1024 (GiB).
  static const std::pair<const char*, double> units[] = {{"", 1.0},
                                                         {"b", 1.0},
                                                         {"kb", 1e3},
                                                         {"mb", 1e6},
                                                         {"gb", 1e9},
                                                         {"tb", 1e12},
                                                         {"kib", 1024.0},
                                                         {"mib", 1048576.0},
                                                         {"gib", 1073741824.0},
                                                         {"tib", 1099511627776.0}};
  for (const auto& [name, mult] : units) {
    if (unit != name) continue;
    const double bytes = std::round(value * mult);
    if (bytes >= 18446744073709551615.0) fail(key, what, v);
    return uint64_t(bytes);
  }
  fail(key, what, v);
}

namespace config_detail {
namespace {

constexpr int64_t kIntMax = INT_MAX;

void parse_model(const json& block, Config& c) {
  ObjectReader r(block, "hybrid.model", c.ignored_keys);
  ModelConfig& m = c.model;
  if (auto v = r.choice("type", model_types())) m.type = *v;
  if (auto v = r.integer("n_layer", 1, kIntMax)) m.n_layer = int(*v);
  if (auto v = r.integer("n_embd", 1, kIntMax)) m.n_embd = int(*v);
  if (auto v = r.integer("n_head", 1, kIntMax)) m.n_head = int(*v);
  if (auto v = r.integer("vocab_size", 1, kIntMax)) m.vocab_size = int(*v);
  if (auto v = r.integer("padded_vocab_size", 0, kIntMax)) m.padded_vocab_size = int(*v);
  if (auto v = r.integer("seq_len", 1, kIntMax)) m.seq_len = int(*v);
  if (auto v = r.integer("n_kv_head", 0, kIntMax)) m.n_kv_head = int(*v);
  if (auto v = r.integer("intermediate_size", 0, kIntMax)) m.intermediate_size = int(*v);
  if (auto v = r.number("rope_theta", 1.0)) m.rope_theta = *v;
  if (auto v = r.number("norm_eps", 0.0, 1.0, true)) m.norm_eps = *v;
  if (auto v = r.boolean("tie_embeddings")) m.tie_embeddings = *v;
  r.finish();
  if (m.n_head % m.kv_heads() != 0)
    throw ConfigError(
        fmt::format("config: hybrid.model.n_head ({}) must be divisible by "
                    "hybrid.model.n_kv_head ({})",
                    m.n_head, m.kv_heads()));
  if (m.n_embd % m.n_head != 0)
    throw ConfigError(
        fmt::format("config: hybrid.model.n_embd ({}) must be divisible by "
                    "hybrid.model.n_head ({})",
                    m.n_embd, m.n_head));
  if (const std::string why = model_refusal(m); !why.empty())
    throw ConfigError(fmt::format("config: {} (hybrid.model.type {})", why, m.type));
  if (m.padded_vocab_size != 0 && m.padded_vocab_size < m.vocab_size)
    throw ConfigError(
        fmt::format("config: hybrid.model.padded_vocab_size must be 0 (round up to a "
                    "multiple of 128) or >= vocab_size ({}), got {}",
                    m.vocab_size, m.padded_vocab_size));
}

void parse_synthetic(const json& block, Config& c) {
  ObjectReader r(block, "hybrid.data.synthetic", c.ignored_keys);
  DataConfig& d = c.data;
  if (auto v = r.integer("tokens", 2)) d.synthetic_tokens = *v;
  if (auto v = r.integer("val_tokens", 0)) d.synthetic_val_tokens = *v;
  if (auto v = r.integer("branching", 1, 65536)) d.synthetic_branching = int(*v);
  if (auto v = r.number("noise", 0.0, 1.0, true)) d.synthetic_noise = float(*v);
  r.finish();
}

// hybrid.data.val_every needs a validation stream, and a forward the whole
// model runs on one rank: a pipeline's stages run theirs only inside 1F1B.
void check_validation(const Config& c) {
  const DataConfig& d = c.data;
  if (d.val_every == 0) return;
  if (c.parallel.pipeline_stages > 1)
    throw ConfigError(fmt::format(
        "config: hybrid.data.val_every {} with pipeline.stages {}: validation runs the whole "
        "model's forward outside the pipeline schedule, which pipeline stages do not support; "
        "set val_every to 0",
        d.val_every, c.parallel.pipeline_stages));
  if (d.synthetic ? d.synthetic_val_tokens == 0 : d.val.empty())
    throw ConfigError(fmt::format(
        "config: hybrid.data.val_every {} needs a validation stream: hybrid.data.val (a glob of "
        "token shards) or hybrid.data.synthetic.val_tokens above 0",
        d.val_every));
}

void parse_data(const json& v, Config& c) {
  DataConfig& d = c.data;
  const char* what = "\"synthetic\" or an object {\"train\": glob, \"val\": glob}";
  if (v.is_string()) {
    if (v.get_ref<const std::string&>() != "synthetic") fail("hybrid.data", what, v);
    d.synthetic = true;
    return;
  }
  if (!v.is_object()) fail("hybrid.data", what, v);
  ObjectReader r(v, "hybrid.data", c.ignored_keys);
  if (auto t = r.integer("seq_len", 1, kIntMax)) d.seq_len = int(*t);
  if (auto v = r.integer("val_every", 0, INT64_MAX, "a non-negative integer (0: never)"))
    d.val_every = *v;
  if (auto v = r.integer("val_batches", 1, kIntMax)) d.val_batches = int(*v);
  parse_documents(r, c);
  const auto train = r.string("train");
  const auto val = r.string("val");
  const json* synth = r.get("synthetic");
  if (synth && train)
    throw ConfigError(
        "config: hybrid.data must give either \"train\" (token shards) or "
        "\"synthetic\", not both");
  if (synth) {
    if (synth->is_object())
      parse_synthetic(*synth, c);
    else if (!(synth->is_boolean() && synth->get<bool>()))
      fail("hybrid.data.synthetic", "true or an object {tokens, val_tokens, branching, noise}",
           *synth);
    d.synthetic = true;
  } else {
    if (!train)
      throw ConfigError(
          "config: hybrid.data.train must be given (a glob of llm.c token shards), "
          "or use \"data\": \"synthetic\"");
    if (train->empty()) fail("hybrid.data.train", "a non-empty glob", json(*train));
    d.synthetic = false;
    d.train = *train;
    d.val = val.value_or("");
  }
  r.finish();
  check_validation(c);
}

void parse_checkpoint(const json& block, Config& c) {
  ObjectReader r(block, "hybrid.checkpoint", c.ignored_keys);
  CheckpointConfig& k = c.checkpoint;
  if (auto v = r.string("dir")) k.dir = *v;
  if (auto v = r.integer("interval", 0, INT64_MAX, "a non-negative integer (0: none)"))
    k.interval = *v;
  if (auto v = r.integer("optimizer_interval", 0, INT64_MAX, "a non-negative integer (0: none)"))
    k.optimizer_interval = *v;
  if (auto v = r.integer("keep_last", 0, INT64_MAX, "a non-negative integer (0: keep all)"))
    k.keep_last = *v;
  r.finish();
}

void parse_profiler(const json& block, Config& c) {
  ObjectReader r(block, "hybrid.profiler", c.ignored_keys);
  ProfilerConfig& p = c.profiler;
  if (auto v = r.boolean("trace")) p.trace = *v;
  if (auto v = r.integer("trace_steps", 1, kIntMax)) p.trace_steps = int(*v);
  if (auto v = r.string("chrome_trace")) p.chrome_trace = *v;
  r.finish();
}

// hybrid.model read from a Hugging Face directory's config.json; a model block
// the config also gives must agree with it, key by key.
void take_model_from_hf(const json* given, Config& c) {
  ModelConfig from_dir;
  try {
    from_dir = read_hf_model_config(c.init_from);
  } catch (const DataFileError& e) {
    throw ConfigError(fmt::format("config: hybrid.init_from: {}", e.what()));
  }
  if (given) check_model_agrees(*given, from_dir, c.init_from);
  from_dir.padded_vocab_size = c.model.padded_vocab_size;
  c.model = from_dir;
}

}  // namespace

void parse_hybrid_block(const json& block, Config& c) {
  ObjectReader h(block, "hybrid", c.ignored_keys);
  const json* model = h.object("model");
  if (model) parse_model(*model, c);
  if (const json* d = h.get("data")) parse_data(*d, c);
  if (auto v = h.string("init_from")) c.init_from = *v;
  if (is_hf_directory(c.init_from)) take_model_from_hf(model, c);
  if (auto v = h.choice("device", kDevices)) c.device = *v;
  if (const json* v = h.get("memory_budget"))
    c.memory_budget = parse_byte_size(*v, "hybrid.memory_budget");
  if (const json* v = h.get("seed")) {
    if (v->is_number_unsigned())
      c.seed = v->get<uint64_t>();
    else {
      const int64_t s = to_integer(*v, "hybrid.seed", "a non-negative integer");
      if (s < 0) fail("hybrid.seed", "a non-negative integer", *v);
      c.seed = uint64_t(s);
    }
  }
  if (auto v = h.integer("threads", 0, kIntMax, "a non-negative integer (0: automatic)"))
    c.threads = int(*v);
  if (auto v = h.choice("gemm", {"auto", "onednn", "openblas", "avx512bf16"})) c.gemm = *v;
  if (const json* k = h.object("checkpoint")) parse_checkpoint(*k, c);
  if (const json* p = h.object("profiler")) parse_profiler(*p, c);
  if (const json* a = h.object("activation_checkpointing")) parse_hybrid_checkpointing(*a, c);
  if (const json* o = h.object("rollout")) parse_rollout(*o, c);
  h.finish();
  // The training length defaults to the block size and cannot exceed it (wpe rows).
  if (c.data.seq_len == 0) c.data.seq_len = c.model.seq_len;
  if (c.data.seq_len > c.model.seq_len)
    throw ConfigError(
        fmt::format("config: hybrid.data.seq_len ({}) must not exceed the block size "
                    "hybrid.model.seq_len ({})",
                    c.data.seq_len, c.model.seq_len));
}

}  // namespace config_detail
}  // namespace hybrid::engine
