#!/usr/bin/env python3
"""Ten AdamW steps of a small Llama directory under Hugging Face transformers.

The figures in tests/engine/llama_model_test.cpp (kTransformersLosses) come from
this script; the suite does not run it. Get the directory and token stream with
  HYBRID_WRITE_REFERENCE_TO=/tmp/llamaref build/tests/hybrid_engine_tests \\
      --gtest_filter='LlamaModel.*Transformers*'
then, in a venv made with --system-site-packages beside Debian's python3-torch
and `pip install transformers==4.36.2`:
  VENV/bin/python scripts/peers/llama_hf_reference.py /tmp/llamaref

The batches are hybrid's data loader's (engine/data/data_loader.h): step s holds
samples 4s..4s+3, sample j the 33 tokens from stream position 32j. The loss of
a step is the mean cross-entropy of its 128 tokens before the update.
"""
import sys

import torch
import transformers
from transformers import LlamaForCausalLM

ROWS, T, STEPS = 4, 32, 10


def token(k):
    return ((k * 2654435761) & 0xFFFFFFFF) >> 24


def main(path):
    torch.manual_seed(0)
    model = LlamaForCausalLM.from_pretrained(path + "/hf", torch_dtype=torch.float32)
    model.train()  # no dropout in this config; train() only for the record
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    losses = []
    for s in range(STEPS):
        rows = []
        for i in range(ROWS):
            j = s * ROWS + i
            rows.append([token(j * T + t) for t in range(T + 1)])
        batch = torch.tensor(rows)
        logits = model(batch[:, :T]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"// transformers {transformers.__version__}, torch {torch.__version__}")
    print("    " + ", ".join(f"{v:.9f}" for v in losses))


if __name__ == "__main__":
    main(sys.argv[1])
