#include "engine/generate/generator.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "engine/generate/decode_threads.h"

namespace hybrid::engine {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The context's training shape and no decoding again, exceptions included.
struct RestoreContext {
  ExecutionContext& ctx;
  int B, T;
  explicit RestoreContext(ExecutionContext& c) : ctx(c), B(c.B()), T(c.T()) {}
  ~RestoreContext() {
    ctx.set_shape(B, T);
    ctx.set_decoding(nullptr);
  }
};

// Row values of any dtype → fp32.
void to_floats(float* dst, const char* src, kernels::DType dt, size_t n) {
  kernels::dispatch_dtype(dt, [&](auto tag) {
    const auto* values = reinterpret_cast<const decltype(tag)*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = kernels::load(values[i]);
  });
}

}  // namespace

int64_t GenerationResult::new_tokens() const {
  int64_t n = 0;
  for (const auto& t : tokens) n += int64_t(t.size());
  return n;
}

std::string generation_error(const std::vector<std::vector<int>>& prompts,
                             const GenerationParams& p, const ModelConfig& model) {
  if (prompts.empty()) return "no prompts: give at least one";
  if (p.max_new_tokens < 1)
    return fmt::format("max_new_tokens {} must be at least 1", p.max_new_tokens);
  if (std::string e = sampling_error(p.sampling); !e.empty()) return e;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& pr = prompts[i];
    if (pr.empty()) return fmt::format("prompt {} is empty: a prompt needs at least one token", i);
    for (size_t j = 0; j < pr.size(); ++j)
      if (pr[j] < 0 || pr[j] >= model.vocab_size)
        return fmt::format("prompt {}: token {} at position {} is outside the vocabulary [0, {})",
                           i, pr[j], j, model.vocab_size);
    if (int64_t(pr.size()) + p.max_new_tokens > model.seq_len)
      return fmt::format(
          "prompt {}: {} tokens plus max_new_tokens {} exceed the block size {} "
          "(hybrid.model.seq_len)",
          i, pr.size(), p.max_new_tokens, model.seq_len);
  }
  if (!p.sequence_ids.empty() && p.sequence_ids.size() != prompts.size())
    return fmt::format("sequence_ids: {} for {} prompts", p.sequence_ids.size(), prompts.size());
  for (int s : p.stop_tokens)
    if (s < 0 || s >= model.vocab_size)
      return fmt::format("stop token {} is outside the vocabulary [0, {})", s, model.vocab_size);
  return "";
}

std::pair<int, int> Generator::shape_for(const std::vector<std::vector<int>>& prompts) {
  size_t longest = 1;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  // A prefill is one row of its prompt; a decode step one token of every row.
  const size_t rows = (prompts.size() + longest - 1) / longest;
  return {int(std::max<size_t>(rows, 1)), int(longest)};
}

bool Generator::fits(const CausalLM& model, const std::vector<std::vector<int>>& prompts) {
  const int longest = shape_for(prompts).second;
  return longest <= model.bound_T() &&
         int64_t(prompts.size()) <= int64_t(model.bound_B()) * model.bound_T();
}

Generator::Generator(CausalLM& model, ExecutionContext& ctx, TrackingAllocator& alloc,
                     GenerationHooks hooks, KeptCache* kept)
    : model_(model), ctx_(ctx), alloc_(alloc), hooks_(std::move(hooks)), kept_(kept) {}

const std::vector<float>& Generator::step(const int32_t* tokens, const std::vector<int>& start,
                                          int first_row, int T) {
  kernels::Backend& be = ctx_.backend();
  const int B = int(start.size());
  positions_.clear();
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) positions_.push_back(start[size_t(b)] + t);
  const size_t n = positions_.size();
  be.copy_from_host(model_.tokens_buffer(), tokens, n * sizeof(int32_t));
  be.copy_from_host(cache_->data("generate.positions"), positions_.data(), n * sizeof(int32_t));
  const Decoding d{start.data(), static_cast<const int32_t*>(cache_->data("generate.positions")),
                   first_row, max_tokens_, cache_dtype_};
  ctx_.set_shape(B, T);
  ctx_.set_decoding(&d);
  ctx_.forward(model_);
  if (hooks_.after_forward) hooks_.after_forward();
  const int Vp = model_.padded_vocab(), V = model_.config().vocab_size;
  const size_t row = size_t(Vp) * kernels::dtype_size(ctx_.dtype());
  raw_logits_.resize(size_t(B) * row);
  be.copy_to_host(raw_logits_.data(), whole_logits(B), raw_logits_.size());
  logits_.resize(size_t(B) * size_t(V));
  for (int b = 0; b < B; ++b)
    to_floats(logits_.data() + size_t(b) * V, raw_logits_.data() + size_t(b) * row, ctx_.dtype(),
              size_t(V));
  return logits_;
}

// Under tensor parallelism the head gives each rank its slice of the
// vocabulary: the slices go to their columns of a zeroed [B, Vp] buffer summed
// over the group (adding zeros is exact in any dtype), so every rank of the
// group samples from the same whole logits.
const void* Generator::whole_logits(int B) {
  const TensorSlice tp = model_.tensor_slice();
  if (tp.parts == 1) return model_.generated_logits();
  kernels::Backend& be = ctx_.backend();
  const size_t es = kernels::dtype_size(ctx_.dtype()), Vp = size_t(model_.padded_vocab());
  const size_t part = Vp / size_t(tp.parts);
  char* whole = static_cast<char*>(cache_->data("generate.logits"));
  const char* mine = static_cast<const char*>(model_.generated_logits());
  be.zero(whole, size_t(B) * Vp * es);
  for (size_t b = 0; b < size_t(B); ++b)
    be.copy(whole + (b * Vp + size_t(tp.index) * part) * es, mine + b * part * es, part * es);
  ctx_.tp_all_reduce(whole, size_t(B) * Vp);
  return whole;
}

// The rows of one generate call: their prompts, samplers, what they produced
// and which have ended.
struct Generator::Rows {
  const std::vector<std::vector<int>>& prompts;
  const GenerationParams& p;
  int V;
  std::vector<TokenSampler> samplers;
  std::vector<bool> done;
  GenerationResult r;
  Clock::time_point t0 = Clock::now();

  Rows(const std::vector<std::vector<int>>& prompts_, const GenerationParams& p_, int vocab)
      : prompts(prompts_), p(p_), V(vocab), done(prompts_.size(), false) {
    for (size_t b = 0; b < prompts.size(); ++b)
      samplers.emplace_back(p.sampling, p.sequence_ids.empty() ? int(b) : p.sequence_ids[b]);
    r.tokens.resize(prompts.size());
    r.ttft_ms.resize(prompts.size());
  }
  int size() const { return int(prompts.size()); }
  bool any_left() const { return std::count(done.begin(), done.end(), false) > 0; }
  // Row b's next token from its logits; it ends at max_new_tokens or a stop token.
  void take(int b, const float* logits) {
    const int token = samplers[size_t(b)].next(logits, V);
    auto& tokens = r.tokens[size_t(b)];
    tokens.push_back(token);
    done[size_t(b)] = int(tokens.size()) == p.max_new_tokens ||
                      std::count(p.stop_tokens.begin(), p.stop_tokens.end(), token) > 0;
  }
};

void Generator::check(const std::vector<std::vector<int>>& prompts,
                      const GenerationParams& p) const {
  if (std::string e = generation_error(prompts, p, model_.config()); !e.empty())
    throw std::invalid_argument(e);
  if (!model_.first_stage() || !model_.last_stage())
    throw std::invalid_argument(
        "generation runs the whole model on each rank: pipeline parallelism is not supported "
        "yet");
  if (!fits(model_, prompts))
    throw std::invalid_argument(fmt::format(
        "generation of {} prompts needs activations for [{}, {}] tokens; the model is bound for "
        "[{}, {}]",
        prompts.size(), shape_for(prompts).first, shape_for(prompts).second, model_.bound_B(),
        model_.bound_T()));
}

// The cache of every row up to its longest prompt plus max_new_tokens, in
// p.cache_dtype, and the positions' device buffer, wired into the model.
MemoryLayout Generator::cache_layout(int rows, int max_tokens, size_t positions,
                                     kernels::DType dt) const {
  MemoryLayout layout = model_.kv_cache_layout(rows, max_tokens, dt);
  layout.add("generate.positions", uint64_t(positions), sizeof(int32_t), MemCategory::other);
  if (model_.tensor_slice().parts > 1)  // whole_logits
    layout.add("generate.logits", uint64_t(rows) * uint64_t(model_.padded_vocab()),
               kernels::dtype_size(ctx_.dtype()), MemCategory::other);
  return layout;
}

void Generator::open_cache(const std::vector<std::vector<int>>& prompts,
                           const GenerationParams& p) {
  size_t longest = 0;
  for (const auto& pr : prompts) longest = std::max(longest, pr.size());
  const int rows = int(prompts.size()), need = int(longest) + p.max_new_tokens;
  cache_dtype_ = p.cache_dtype.value_or(ctx_.dtype());
  if (!kept_) {
    max_tokens_ = need;
    own_cache_ = LayoutBuffers(
        alloc_, cache_layout(rows, need, std::max(longest, prompts.size()), cache_dtype_));
    cache_ = &own_cache_;
  } else {
    KeptCache& k = *kept_;
    if (k.rows < rows || k.max_tokens < need || k.dtype != cache_dtype_) {
      const bool same_dtype = k.dtype == cache_dtype_;  // grows what it holds
      k.rows = same_dtype ? std::max(k.rows, rows) : rows;
      k.max_tokens = same_dtype ? std::max(k.max_tokens, need) : need;
      k.dtype = cache_dtype_;
      k.buffers = LayoutBuffers();  // the old cache goes before the new one comes
      k.buffers = LayoutBuffers(
          alloc_,
          cache_layout(k.rows, k.max_tokens, size_t(std::max(k.rows, k.max_tokens)), k.dtype));
    }
    max_tokens_ = k.max_tokens;  // each row's stride in the cache
    cache_ = &k.buffers;
  }
  model_.wire_kv_cache(cache_);
}

void Generator::close_cache() {
  model_.wire_kv_cache(nullptr);
  own_cache_ = LayoutBuffers();
  cache_ = nullptr;
}

// A prompt at a time: its first new token.
void Generator::prefill(Rows& rows) {
  const uint32_t name = hooks_.tracer ? hooks_.tracer->intern("prefill") : 0;
  for (int b = 0; b < rows.size(); ++b) {
    profiler::Scope phase(hooks_.tracer, name, profiler::Category::prefill);
    const auto& pr = rows.prompts[size_t(b)];
    const std::vector<int32_t> tokens(pr.begin(), pr.end());
    rows.take(b, step(tokens.data(), {0}, b, int(pr.size())).data());
    rows.r.ttft_ms[size_t(b)] = ms_since(rows.t0);
  }
}

// Every row steps together; a finished row runs on, unread (and a finished
// rank, while another one that gathers with it has rows left).
void Generator::decode(Rows& rows) {
  const int B = rows.size();
  std::vector<int32_t> last(static_cast<size_t>(B));
  std::vector<int> start(static_cast<size_t>(B));
  const auto running = [&] {
    return hooks_.any_rank_running ? hooks_.any_rank_running(rows.any_left()) : rows.any_left();
  };
  const uint32_t name = hooks_.tracer ? hooks_.tracer->intern("decode") : 0;
  // The CPU's steps on all of the rank's threads or on one, the faster
  // (decode_threads.h); the rank's count comes back, exceptions included.
  struct ThreadsBack {
    int n = omp_get_max_threads();
    ~ThreadsBack() { omp_set_num_threads(n); }
  } back;
  const bool cpu = ctx_.backend().kind() == kernels::BackendKind::cpu;
  const int most = cpu ? back.n : 1;
  std::optional<DecodeThreads> own;
  DecodeThreads& threads =
      hooks_.threads && hooks_.threads->most() == most ? *hooks_.threads : own.emplace(most);
  while (running()) {
    profiler::Scope phase(hooks_.tracer, name, profiler::Category::decode);
    rows.r.decode_threads.push_back(threads.next());
    if (cpu) omp_set_num_threads(rows.r.decode_threads.back());
    const auto ts = Clock::now();
    for (int b = 0; b < B; ++b) {
      last[size_t(b)] = rows.r.tokens[size_t(b)].back();
      start[size_t(b)] = int(rows.prompts[size_t(b)].size() + rows.r.tokens[size_t(b)].size()) - 1;
    }
    const auto& logits = step(last.data(), start, 0, 1);
    for (int b = 0; b < B; ++b)
      if (!rows.done[size_t(b)]) rows.take(b, logits.data() + size_t(b) * rows.V);
    rows.r.tpot_ms.push_back(ms_since(ts));
    threads.record(rows.r.tpot_ms.back());
  }
}

GenerationResult Generator::generate(const std::vector<std::vector<int>>& prompts,
                                     const GenerationParams& p) {
  check(prompts, p);
  RestoreContext restore(ctx_);
  open_cache(prompts, p);
  struct Closer {  // the cache goes, exceptions included
    Generator& g;
    ~Closer() { g.close_cache(); }
  } closer{*this};
  Rows rows(prompts, p, model_.config().vocab_size);
  prefill(rows);
  decode(rows);
  rows.r.total_ms = ms_since(rows.t0);
  return std::move(rows.r);
}

}  // namespace hybrid::engine
