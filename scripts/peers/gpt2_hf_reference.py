#!/usr/bin/env python3
"""Per-position losses of a GPT-2 directory under Hugging Face transformers.

The figures in tests/engine/gpt2_hf_test.cpp (Gpt2Hf.PerPositionLossesEqualTransformers)
come from this script; the suite does not run it. Get the directory with
  HYBRID_WRITE_REFERENCE_TO=/tmp/gpt2ref build/tests/hybrid_engine_tests \\
      --gtest_filter=Gpt2Hf.PerPositionLossesEqualTransformers
then, in a venv made with --system-site-packages beside Debian's python3-torch
and `pip install transformers==4.36.2`:
  VENV/bin/python scripts/peers/gpt2_hf_reference.py /tmp/gpt2ref
"""
import sys

import torch
import transformers
from transformers import GPT2LMHeadModel


def token(k):
    return (7 * k * k + 3 * k + 1) % 64


def main(path):
    model = GPT2LMHeadModel.from_pretrained(path).eval()
    stream = [token(k) for k in range(33)]
    inputs = torch.tensor([stream[0:16], stream[16:32]])
    targets = torch.tensor([stream[1:17], stream[17:33]])
    with torch.no_grad():
        logits = model(inputs).logits.double()
    losses = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none").reshape(2, 16)
    print(f"// transformers {transformers.__version__}, torch {torch.__version__}")
    for row in losses.tolist():
        print("    {" + ", ".join(f"{v:.9f}" for v in row) + "},")


if __name__ == "__main__":
    main(sys.argv[1])
