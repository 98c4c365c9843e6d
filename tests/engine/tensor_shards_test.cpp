// Tensor parallelism's pieces of GPT-2 (engine/parallel/tensor_shards.h): a
// rank's parameter count equals Megatron's closed form, its pieces sit where
// the whole tensors hold them (checked element by element against the split
// written out by hand), and every rank's pieces put back together give the
// whole model again.
#include "engine/parallel/tensor_shards.h"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/model/gpt2/gpt2.h"
#include "tests/engine/engine_test_util.h"

namespace hybrid::engine {
namespace {

// 12 blocks of 768 channels, 12 heads, 50257 tokens, 1024 positions.
ModelConfig gpt2_124m() { return test::gpt2_sized(12, 768, 12, 50257, 1024); }

// Per block 12C²/tp + 7C/tp (the cut weights and biases) + 6C (layernorms and
// the row-parallel layers' biases, whole on every rank); Vp·C/tp of wte, the
// whole wpe and ln_f.
TEST(TensorShards, ARanksParameterCountIsMegatronsClosedForm) {
  const ModelConfig m = gpt2_124m();
  const int64_t C = m.n_embd, L = m.n_layer, Vp = 50304, S = m.seq_len;
  for (int tp : {1, 2, 4}) {
    GPT2 model(m, int(Vp), {tp, tp - 1});
    ModuleTree tree(model);
    const int64_t block = 12 * C * C / tp + 7 * C / tp + 6 * C;
    EXPECT_EQ(tree.param_count(), Vp * C / tp + S * C + L * block + 2 * C) << "tp " << tp;
    EXPECT_EQ(tree.full_param_count(), Vp * C + S * C + L * (12 * C * C + 13 * C) + 2 * C);
  }
}

TEST(TensorShards, PiecesSitWhereMegatronCutsThemAndPutTogetherGiveTheWhole) {
  const ModelConfig m = test::gpt2_sized(1, 8, 2, 30, 4);  // 1 block of 8 channels, 2 heads
  const int Vp = 32, tp = 2, C = 8;
  std::vector<float> whole;
  std::vector<float> rebuilt;
  for (int t = 0; t < tp; ++t) {
    GPT2 model(m, Vp, {tp, t});
    ModuleTree tree(model);
    if (whole.empty()) {
      whole.resize(size_t(tree.full_param_count()));
      std::iota(whole.begin(), whole.end(), 0.0f);  // each element its own flat index
      rebuilt.assign(whole.size(), -1.0f);
    }
    const auto pieces = shard_flat(tree, whole.data());
    ASSERT_EQ(int64_t(pieces.size()), tree.param_count());
    auto at = [&](const ParamSpec* p, int64_t i) { return pieces[size_t(p->offset + i)]; };
    // c_attn's weight [3C, C]: rank t holds rows [tC/2, (t+1)C/2) of each of q, k, v.
    const ParamSpec* qkv = model.blocks[0]->c_attn->own_params()[0];
    ASSERT_EQ(qkv->shape, (std::vector<int64_t>{3 * C / tp, C}));
    for (int g = 0; g < 3; ++g)
      for (int r = 0; r < C / tp; ++r)
        for (int c = 0; c < C; ++c)
          EXPECT_EQ(at(qkv, (g * C / tp + r) * C + c),
                    float(qkv->full_offset + (g * C + t * C / tp + r) * C + c));
    // attn.c_proj's weight [C, C]: rank t holds columns [tC/2, (t+1)C/2) of every row.
    const ParamSpec* proj = model.blocks[0]->attn_proj->own_params()[0];
    ASSERT_EQ(proj->shape, (std::vector<int64_t>{C, C / tp}));
    for (int r = 0; r < C; ++r)
      for (int c = 0; c < C / tp; ++c)
        EXPECT_EQ(at(proj, r * (C / tp) + c), float(proj->full_offset + r * C + t * C / tp + c));
    // wte: rows [t·Vp/2, (t+1)·Vp/2); the row-parallel bias is whole.
    const ParamSpec* wte = model.embedding->wte();
    EXPECT_EQ(at(wte, 0), float(wte->full_offset + t * (Vp / tp) * C));
    const ParamSpec* proj_bias = model.blocks[0]->attn_proj->own_params()[1];
    EXPECT_EQ(proj_bias->numel, C);
    EXPECT_EQ(at(proj_bias, C - 1), float(proj_bias->full_offset + C - 1));
    unshard_flat(tree, pieces.data(), rebuilt.data(), t);
  }
  EXPECT_EQ(rebuilt, whole);
}

}  // namespace
}  // namespace hybrid::engine
