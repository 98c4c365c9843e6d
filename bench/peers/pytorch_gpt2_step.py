#!/usr/bin/python3
"""The PyTorch peer of bench_train_step: one GPT-2 training step (forward,
backward, AdamW) at the same shapes and thread count, fp32 and bf16 autocast.

A peer to compare against, not a dependency: it needs Debian's python3-torch
(1.13, CPU). The README's CPU table quotes its medians next to
bench_train_step's, measured in the same session on the same machine.

    /usr/bin/python3 bench/peers/pytorch_gpt2_step.py [--threads 2] [--steps 3] [--B 4] [--T 256]

(Debian's own Python, which has python3-torch.) Its fp32 GEMMs run on Debian's
OpenBLAS with the core type OpenBLAS detects; run it with OPENBLAS_CORETYPE set
(e.g. SkylakeX) to give it the kernel hybrid chooses for the same CPU.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from peer_step import median_step_seconds, parse_args


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, L, C, H, V, T):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def main():
    a = parse_args()
    L, C, H, V = 12, 768, 12, 50257
    model = GPT2(L, C, H, V, 1024)
    n = sum(p.numel() for p in model.parameters())
    flops = (6 * n + 6 * L * C * a.T) * a.B * a.T  # bench_train_step's model FLOPs
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    idx = torch.randint(0, V, (a.B, a.T))
    print(f"torch {torch.__version__}, {a.threads} threads, GPT-2 124M, B={a.B} T={a.T}, "
          f"{flops / 1e9:.0f} GFLOP/step")
    for name, bf16 in (("fp32", False), ("bf16 autocast", True)):
        s = median_step_seconds(model, opt, idx, idx, a.steps, bf16)
        print(f"pytorch {name}: {1e3 * s:.0f} ms/step (median of {a.steps}), "
              f"{flops / s / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
