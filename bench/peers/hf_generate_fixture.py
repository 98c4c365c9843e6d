"""Writes the Hugging Face fixtures of tests/engine/hf_generate_test.cpp: a tiny
LlamaForCausalLM and a tiny GPT2LMHeadModel, trained in PyTorch on a bigram
rule (x -> 5x + 3 mod 64) so that their next-token choices are clear-cut, saved
with save_pretrained (config.json + model.safetensors), and the greedy tokens
transformers' generate gives for the test's prompts (one prompt at a time, no
padding), written to expected.json next to them.

  /work/peers-venv/bin/python bench/peers/hf_generate_fixture.py tests/engine/data/generate

Peers only (never run by the suite): transformers 4.36.2 on Debian's torch 1.13.
"""
import json
import os
import sys

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

V, T, NEW = 64, 80, 24
PROMPTS = [[5, 9, 1, 33, 12], [7], [60, 2, 2, 2, 2, 2, 2, 2, 40], [0, 1, 2]]


def rule(x):
    return (5 * x + 3) % V


def batch(step, rows=8, length=32):
    seqs = []
    for r in range(rows):
        x = (r * 13 + step * 7) % V
        seq = [x]
        for _ in range(length - 1):
            seq.append(rule(seq[-1]))
        seqs.append(seq)
    return torch.tensor(seqs)


def train(model, steps=150):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for s in range(steps):
        x = batch(s)
        loss = model(input_ids=x, labels=x).loss  # HF shifts the labels
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss)


def greedy(model):
    out = []
    for p in PROMPTS:
        ids = torch.tensor([p])
        g = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW,
                           do_sample=False, pad_token_id=0)
        out.append(g[0, len(p):].tolist())
    return out


def main(root):
    torch.manual_seed(0)
    models = {
        "llama": LlamaForCausalLM(LlamaConfig(
            vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
            tie_word_embeddings=False, rms_norm_eps=1e-5)),
        "gpt2": GPT2LMHeadModel(GPT2Config(
            vocab_size=V, n_embd=32, n_layer=2, n_head=2, n_positions=T)),
    }
    expected = {"transformers": transformers.__version__, "torch": torch.__version__,
                "max_new_tokens": NEW, "prompts": PROMPTS}
    for name, model in models.items():
        loss = train(model)
        model.eval()
        with torch.no_grad():
            expected[name] = greedy(model)
        model.save_pretrained(os.path.join(root, name), safe_serialization=True)
        print(f"{name}: final training loss {loss:.4f}")
    with open(os.path.join(root, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
