#!/usr/bin/python3
"""The PyTorch peer of bench_train_step's Llama: one training step (forward,
backward, AdamW) of a Llama the size of GPT-2 124M (12 layers, width 768, 12
heads, 4 key/value heads, SwiGLU 2048, vocabulary 32000, untied) at the same
shapes and thread count, fp32, written in plain PyTorch (RMSNorm, rotary
positions in the rotate-half layout, grouped-query attention, no biases).

A peer to compare against, not a dependency: it needs Debian's python3-torch
(1.13, CPU). The README quotes its median next to bench_train_step's, measured
on the same machine in the same session.

    /usr/bin/python3 bench/peers/pytorch_llama_step.py [--threads 2] [--steps 3] [--B 4] [--T 256]
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from peer_step import median_step_seconds, parse_args


class RMSNorm(nn.Module):
    def __init__(self, C, eps=1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(C)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


class Block(nn.Module):
    def __init__(self, C, H, KV, I):
        super().__init__()
        self.H, self.KV, self.hs = H, KV, C // H
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(C), RMSNorm(C)
        self.qkv = nn.Linear(C, C + 2 * KV * self.hs, bias=False)
        self.o_proj = nn.Linear(C, C, bias=False)
        self.gate_up = nn.Linear(C, 2 * I, bias=False)
        self.down = nn.Linear(I, C, bias=False)

    def attention(self, x, cos, sin):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split([C, self.KV * self.hs, self.KV * self.hs], dim=2)
        q = q.view(B, T, self.H, self.hs).transpose(1, 2)
        k = k.view(B, T, self.KV, self.hs).transpose(1, 2)
        v = v.view(B, T, self.KV, self.hs).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k = k.repeat_interleave(self.H // self.KV, dim=1)
        v = v.repeat_interleave(self.H // self.KV, dim=1)
        att = (q @ k.transpose(-2, -1)) / self.hs ** 0.5
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.o_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x, cos, sin):
        x = x + self.attention(self.input_layernorm(x), cos, sin)
        gate, up = self.gate_up(self.post_attention_layernorm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, L, C, H, KV, I, V, theta=10000.0):
        super().__init__()
        self.embed = nn.Embedding(V, C)
        self.blocks = nn.ModuleList(Block(C, H, KV, I) for _ in range(L))
        self.norm = RMSNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)
        hs = C // H
        self.inv_freq = 1.0 / theta ** (torch.arange(0, hs, 2).float() / hs)

    def forward(self, idx, targets):
        T = idx.size(1)
        freqs = torch.outer(torch.arange(T).float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x = self.embed(idx)
        for b in self.blocks:
            x = b(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    a = parse_args()
    L, C, H, KV, I, V = 12, 768, 12, 4, 2048, 32000
    model = Llama(L, C, H, KV, I, V)
    # bench_train_step's model FLOPs: N = the weights that multiply activations.
    n = sum(p.numel() for name, p in model.named_parameters()
            if p.dim() == 2 and not name.startswith("embed"))
    flops = (6 * n + 6 * L * C * a.T) * a.B * a.T
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    idx = torch.randint(0, V, (a.B, a.T))
    print(f"torch {torch.__version__}, {a.threads} threads, Llama (GPT-2 124M's size), "
          f"B={a.B} T={a.T}, {flops / 1e9:.0f} GFLOP/step")
    s = median_step_seconds(model, opt, idx, idx, a.steps)
    print(f"pytorch fp32: {1e3 * s:.0f} ms/step (median of {a.steps}), {flops / s / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
