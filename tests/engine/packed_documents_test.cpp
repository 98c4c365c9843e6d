// Packed documents, both families: rows that pack several documents (each
// token's position in its document given, padding with no target) give every
// document the logits it gets run on its own, and the gradient of the summed
// token losses equals the sum of the documents' own gradients (fp32, 1e-6).
// The reference runs each document as the only row of a model bound at its
// length, with no positions at all: plain causal attention, positions 0..L-1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/model/execution_context.h"
#include "engine/model/layers.h"
#include "engine/model/registry.h"
#include "engine_test_util.h"
#include "kernels/registry.h"

namespace hybrid::engine {
namespace {

// Parameters and gradients in host vectors (the CPU backend's device memory is
// host memory).
class HostParamAccess final : public ParamAccess {
 public:
  HostParamAccess(std::vector<float> params) : params_(std::move(params)), grads_(params_.size()) {}
  const void* param(const ParamSpec& p) override { return params_.data() + p.offset; }
  void* grad(const ParamSpec& p) override { return grads_.data() + p.offset; }
  const std::vector<float>& grads() const { return grads_; }

 private:
  std::vector<float> params_, grads_;
};

// Uniform weights in [-0.1, 0.1) (xorshift64: the same on every platform), norm
// scales around 1.
std::vector<float> fixed_weights(const ModuleTree& tree) {
  std::vector<float> flat(size_t(tree.param_count()));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (const ParamSpec* p : tree.params())
    for (int64_t i = 0; i < p->numel; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const float u = 0.2f * (float(x >> 40) / float(1 << 24) - 0.5f);
      flat[size_t(p->offset + i)] = p->shape.size() == 1 ? 1.0f + u : u;
    }
  return flat;
}

struct Document {
  std::vector<int32_t> tokens, targets;
};

// A batch of rows of T tokens: each row's documents one after another, then
// padding (token 0, target -1, its own positions from 0).
struct Packed {
  int B = 0, T = 0;
  std::vector<int32_t> tokens, targets, positions;
  std::vector<std::pair<int, int>> where;  // each document's row and first column
};

Packed pack(const std::vector<std::vector<Document>>& rows, int T) {
  Packed p;
  p.B = int(rows.size()), p.T = T;
  for (int b = 0; b < p.B; ++b) {
    int col = 0;
    for (const Document& d : rows[size_t(b)]) {
      p.where.emplace_back(b, col);
      for (size_t i = 0; i < d.tokens.size(); ++i, ++col) {
        p.tokens.push_back(d.tokens[i]);
        p.targets.push_back(d.targets[i]);
        p.positions.push_back(int32_t(i));
      }
    }
    for (int pad = 0; col < T; ++col, ++pad) {
      p.tokens.push_back(0);
      p.targets.push_back(-1);
      p.positions.push_back(pad);
    }
  }
  return p;
}

struct Outputs {
  std::vector<float> logits;  // [B·T, Vp]
  std::vector<float> grads;   // of the summed token losses
};

// One forward and backward of a fresh `cfg` model bound at [B, T] with these
// weights; positions null: every row one document.
Outputs run(const Config& cfg, const std::vector<float>& weights, int B, int T,
            const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
            const std::vector<int32_t>* positions) {
  auto backend = kernels::make_cpu_backend();
  TrackingAllocator alloc(*backend, 0);
  auto model = make_model(cfg.model, cfg.padded_vocab());
  ModuleTree tree(*model);
  model->bind(alloc, B, T, kernels::DType::f32);
  HostParamAccess params(weights);
  ExecutionContext ctx(*backend, kernels::DType::f32, B, T);
  ctx.set_param_access(&params);
  const size_t n = size_t(B) * T;
  std::copy_n(tokens.data(), n, model->tokens_buffer());
  std::copy_n(targets.data(), n, model->targets_buffer());
  if (positions) std::copy_n(positions->data(), n, model->positions_buffer());
  ctx.set_batch(model->tokens_buffer(), model->targets_buffer(),
                positions ? model->positions_buffer() : nullptr);
  ctx.set_dloss(1.0f);
  ctx.forward(*model);
  const auto* head = dynamic_cast<const Linear*>(model->head_modules().back());
  const auto* logits = static_cast<const float*>(head->out);
  Outputs o;
  o.logits.assign(logits, logits + n * size_t(cfg.padded_vocab()));
  ctx.backward(*model);  // overwrites the logits with their gradient
  o.grads = params.grads();
  return o;
}

// Documents of these lengths, random tokens and next-token targets.
std::vector<Document> documents(const std::vector<int>& lengths, int vocab, uint32_t seed) {
  std::vector<Document> docs;
  uint32_t x = seed;
  const auto next = [&] { return int32_t((x = x * 1664525u + 1013904223u) >> 8) % vocab; };
  for (int L : lengths) {
    Document d;
    for (int i = 0; i < L; ++i) d.tokens.push_back(next());
    for (int i = 0; i < L; ++i) d.targets.push_back(next());
    docs.push_back(std::move(d));
  }
  return docs;
}

void expect_packed_equals_documents(const Config& cfg) {
  const int T = cfg.data.seq_len, Vp = cfg.padded_vocab();
  // Row 0: three documents and padding; row 1: one token, a document across
  // the middle, the rest of the row exactly filled; row 2: one document, long.
  const auto docs = documents({7, 13, 9, 1, 20, T - 21, T - 5}, cfg.model.vocab_size, 11);
  const std::vector<std::vector<Document>> rows = {
      {docs[0], docs[1], docs[2]}, {docs[3], docs[4], docs[5]}, {docs[6]}};
  const Packed p = pack(rows, T);
  auto model = make_model(cfg.model, Vp);
  const ModuleTree tree(*model);
  const auto weights = fixed_weights(tree);
  const Outputs packed = run(cfg, weights, p.B, T, p.tokens, p.targets, &p.positions);

  std::vector<double> summed(packed.grads.size(), 0.0);
  double max_logit_diff = 0.0;
  for (size_t d = 0; d < docs.size(); ++d) {
    const int L = int(docs[d].tokens.size());
    const Outputs alone = run(cfg, weights, 1, L, docs[d].tokens, docs[d].targets, nullptr);
    const auto [row, col] = p.where[d];
    for (int t = 0; t < L; ++t)
      for (int v = 0; v < cfg.model.vocab_size; ++v) {
        const float a = alone.logits[size_t(t) * Vp + size_t(v)];
        const float b = packed.logits[(size_t(row) * T + size_t(col + t)) * Vp + size_t(v)];
        max_logit_diff = std::max(max_logit_diff, double(std::abs(a - b)));
      }
    for (size_t i = 0; i < summed.size(); ++i) summed[i] += alone.grads[i];
  }
  EXPECT_LT(max_logit_diff, 1e-6) << cfg.model.type << ": logits of a packed document";
  double max_grad = 0.0, max_grad_diff = 0.0;
  for (size_t i = 0; i < summed.size(); ++i) {
    max_grad = std::max(max_grad, std::abs(summed[i]));
    max_grad_diff = std::max(max_grad_diff, std::abs(summed[i] - double(packed.grads[i])));
  }
  ASSERT_GT(max_grad, 1e-3) << "a gradient to compare";
  std::printf("[packed] %s: logits within %.3g, gradients within %.3g (largest %.3g)\n",
              cfg.model.type.c_str(), max_logit_diff, max_grad_diff, max_grad);
  EXPECT_LT(max_grad_diff, 1e-6 * std::max(1.0, max_grad))
      << cfg.model.type << ": gradient of the packed rows vs the documents' sum (largest "
      << max_grad << ")";
}

TEST(PackedDocuments, Gpt2LogitsAndGradientsEqualEachDocumentRunAlone) {
  const nlohmann::json model = {{"type", "gpt2"}, {"n_layer", 2},     {"n_embd", 32},
                                {"n_head", 2},    {"vocab_size", 64}, {"seq_len", 40}};
  expect_packed_equals_documents(test::tiny_config({{"hybrid", {{"model", model}}}}));
}

TEST(PackedDocuments, LlamaLogitsAndGradientsEqualEachDocumentRunAlone) {
  const nlohmann::json model = {{"type", "llama"},
                                {"n_layer", 2},
                                {"n_embd", 64},
                                {"n_head", 4},
                                {"n_kv_head", 2},
                                {"vocab_size", 96},
                                {"intermediate_size", 96},
                                {"seq_len", 40},
                                {"rope_theta", 10000.0},
                                {"norm_eps", 1e-5},
                                {"tie_embeddings", false}};
  expect_packed_equals_documents(test::tiny_config({{"hybrid", {{"model", model}}}}));
}

// Padding has no loss and no gradient: changing the padding tokens changes
// neither the real rows' logits nor any gradient.
TEST(PackedDocuments, PaddingChangesNothing) {
  const nlohmann::json model = {{"type", "gpt2"}, {"n_layer", 1},     {"n_embd", 32},
                                {"n_head", 2},    {"vocab_size", 64}, {"seq_len", 24}};
  const Config cfg = test::tiny_config({{"hybrid", {{"model", model}}}});
  const auto docs = documents({9, 6}, 64, 5);
  Packed p = pack({{docs[0], docs[1]}}, 24);
  auto m = make_model(cfg.model, cfg.padded_vocab());
  const ModuleTree tree(*m);
  const auto weights = fixed_weights(tree);
  const Outputs a = run(cfg, weights, 1, 24, p.tokens, p.targets, &p.positions);
  for (int t = 15; t < 24; ++t) p.tokens[size_t(t)] = 40 + t;
  const Outputs b = run(cfg, weights, 1, 24, p.tokens, p.targets, &p.positions);
  const size_t real = 15 * size_t(cfg.padded_vocab());
  EXPECT_TRUE(std::equal(a.logits.begin(), a.logits.begin() + long(real), b.logits.begin()));
  EXPECT_EQ(a.grads, b.grads);
}

}  // namespace
}  // namespace hybrid::engine
