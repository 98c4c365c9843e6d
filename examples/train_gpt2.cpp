// Training a small GPT-2 through the public C++ API only, the way a DeepSpeed
// user's script drives deepspeed.initialize():
//
//   example_train_gpt2 [CHECKPOINT_DIR] [STEPS]
//
// The config is what a ds_config.json would hold; the data is a toy language
// the model can learn in a few steps (each token is the previous one plus a
// fixed stride, modulo the vocabulary), so the printed loss falls quickly. With
// CHECKPOINT_DIR the engine saves a checkpoint there at the end.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace {

// A DeepSpeed config plus our "hybrid" block: a tiny model on the CPU.
hybrid::Config example_config() {
  const nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", 4},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-2}, {"weight_decay", 0.0}}}}},
      {"gradient_clipping", 1.0},
      {"zero_optimization", {{"stage", 1}}},
      {"hybrid",
       {{"model",
         {{"n_layer", 2}, {"n_embd", 32}, {"n_head", 2}, {"vocab_size", 64}, {"seq_len", 16}}},
        {"device", "cpu"},
        {"seed", 1234}}},
  };
  return hybrid::engine::parse_config(j);
}

// Row r of the batch starts at token 3·r and steps by 5: inputs are the first
// seq_len tokens, targets the same sequence shifted by one.
void make_batch(const hybrid::Config& cfg, std::vector<int32_t>& inputs,
                std::vector<int32_t>& targets) {
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.seq_len(), V = cfg.model.vocab_size;
  inputs.resize(size_t(B) * T);
  targets.resize(size_t(B) * T);
  for (int r = 0; r < B; ++r)
    for (int t = 0; t < T; ++t) {
      inputs[size_t(r) * T + t] = (3 * r + 5 * t) % V;
      targets[size_t(r) * T + t] = (3 * r + 5 * (t + 1)) % V;
    }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string checkpoint_dir = argc > 1 ? argv[1] : "";
  const int steps = argc > 2 ? std::stoi(argv[2]) : 30;
  try {
    const hybrid::Config cfg = example_config();
    hybrid::EngineOptions options;
    options.quiet = true;  // the engine's own informational lines
    auto engine = hybrid::initialize(cfg, hybrid::make_model(cfg), std::move(options));

    std::vector<int32_t> inputs, targets;
    make_batch(cfg, inputs, targets);
    for (int s = 1; s <= steps; ++s) {
      const float loss = engine->forward(inputs, targets);
      engine->backward();
      engine->step();  // gradient_accumulation_steps is 1: every call is an optimizer step
      std::printf("step %d loss %.4f\n", s, loss);
    }
    if (!checkpoint_dir.empty()) {
      engine->save_checkpoint(checkpoint_dir, "final");
      std::printf("saved checkpoint %s/final\n", checkpoint_dir.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_train_gpt2: %s\n", e.what());
    return 1;
  }
  return 0;
}
