#!/usr/bin/env python3
"""Writes the binary and generated seeds of fuzz/corpus/ (a few KB each).

The JSON seeds (configs, spaces, suites) are written by hand and committed as
they are; this script makes the files whose bytes are easier to compute: a token
shard, llm.c checkpoints, one of our checkpoints (meta.json + partition with its
CRC-32), Google Benchmark JSON and a Kineto trace. The run store seed is made by
scripts/fuzz.sh's --seed-db step from the Kineto seed (hybrid-prof import-kineto).
Deterministic: rerunning it rewrites identical files.
"""
import json
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(harness, name, data):
    os.makedirs(os.path.join(ROOT, harness), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(ROOT, harness, name), "wb") as f:
        f.write(data)


def header(*ints):
    h = list(ints) + [0] * (256 - len(ints))
    return struct.pack("<256i", *h)


def token_shards():
    tokens = [(i * 7919) % 50257 for i in range(64)]
    put("token_shard", "tiny.bin", header(20240520, 1, len(tokens)) + struct.pack(f"<{len(tokens)}H", *tokens))
    put("token_shard", "one_token.bin", header(20240520, 1, 1) + struct.pack("<H", 50256))


def llmc_checkpoints():
    maxT, V, Vp, L, NH, C = 4, 5, 8, 1, 2, 4
    n = Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C
    h = header(20240326, 3, maxT, V, L, NH, C, Vp)
    put("llmc_checkpoint", "fp32.bin", h + struct.pack(f"<{n}f", *[(i % 17) / 16.0 - 0.5 for i in range(n)]))
    h = header(20240326, 5, maxT, V, L, NH, C, Vp)
    put("llmc_checkpoint", "bf16.bin", h + struct.pack(f"<{n}H", *[0x3F80 + (i % 64) for i in range(n)]))


def partition(rank, begin, end, state_floats):
    count = end - begin
    master = struct.pack(f"<{count}f", *[0.25 * i for i in range(count)])
    state = struct.pack(f"<{count * state_floats}f", *[0.125 * i for i in range(count * state_floats)])
    crc = zlib.crc32(state, zlib.crc32(master))
    payload = (count + count * state_floats) * 4
    head = b"HYBRIDPT" + struct.pack("<IIqqIIQ", 1, rank, begin, end, state_floats, crc, payload) + bytes(16)
    return head + master + state


def checkpoints():
    def meta(parts, param_count, state_floats):
        return json.dumps({
            "format": "hybrid-checkpoint", "version": 1, "tag": "t", "kind": "optimizer",
            "global_step": 3, "applied_steps": 3, "skipped_steps": 0,
            "loss_scaler": {"dynamic": False, "scale": 1.0},
            "data_position": {"step": 3, "samples": 24}, "rng": {"seed": 1234},
            "world_size": len(parts), "zero_stage": 1 if len(parts) > 1 else 0, "dtype": "f32",
            "param_count": param_count, "optimizer": "AdamW", "state_floats": state_floats,
            "model": {"type": "gpt2", "n_layer": 1, "n_embd": 4, "n_head": 2, "vocab_size": 5,
                      "padded_vocab_size": 8, "seq_len": 4},
            "partitions": [{"rank": r, "begin": b, "end": e} for r, b, e in parts]})
    sep = b"\n@@partition@@\n"
    put("checkpoint", "one_rank.ckpt", meta([(0, 0, 40)], 40, 2).encode() + sep + partition(0, 0, 40, 2))
    # Two ranks read the same bytes (the harness writes rank 1's file as a copy).
    put("checkpoint", "two_ranks.ckpt", meta([(0, 0, 20), (1, 0, 20)], 20, 2).encode() + sep + partition(0, 0, 20, 2))


def bench_json():
    def entry(name, rep, t):
        return {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
                "run_type": "iteration", "repetitions": 2, "repetition_index": rep, "threads": 1,
                "iterations": 1000, "real_time": t, "cpu_time": t * 0.98, "time_unit": "ns"}
    doc = {"context": {"date": "2026-12-03T13:00:00+00:00", "host_name": "ci", "num_cpus": 2,
                       "mhz_per_cpu": 2450, "caches": [], "library_build_type": "release"},
           "benchmarks": [entry("matmul/64", 0, 1200.5), entry("matmul/64", 1, 1190.0),
                          entry("gelu/4096/real_time", 0, 310.0), entry("gelu/4096/real_time", 1, 305.0),
                          {"name": "matmul/64_median", "run_name": "matmul/64", "run_type": "aggregate",
                           "aggregate_name": "median", "aggregate_unit": "time", "repetitions": 2,
                           "threads": 1, "iterations": 2, "real_time": 1195.0, "cpu_time": 1170.0,
                           "time_unit": "ns"}]}
    put("bench_json", "two_reps.json", json.dumps(doc, indent=1))


def kineto():
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 990, "dur": 300},
        {"ph": "X", "cat": "user_annotation", "name": "model", "pid": 7, "tid": 7, "ts": 1000, "dur": 100},
        {"ph": "X", "cat": "user_annotation", "name": "layer.forward", "pid": 7, "tid": 7, "ts": 1010, "dur": 40},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 1020, "dur": 2, "args": {"correlation": 11}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 7, "tid": 7, "ts": 1060, "dur": 2, "args": {"correlation": 12}},
        {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "pid": 7, "tid": 8, "ts": 1070, "dur": 20},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 8, "ts": 1080, "dur": 2, "args": {"correlation": 13}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1100.4, "dur": 10, "args": {"correlation": 11, "stream": 7, "device": 0}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1112, "dur": 3, "args": {"correlation": 12, "stream": 7, "device": 0, "bytes": 4096}},
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 20, "ts": 1105, "dur": 20, "args": {"correlation": 14, "stream": 20, "device": 0}},
        {"ph": "X", "cat": "kernel", "name": "gemm_dgrad", "pid": 0, "tid": 7, "ts": 1130, "dur": 5, "args": {"correlation": 13, "stream": 7, "device": 0}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 7, "tid": 7, "ts": 1300, "dur": 50},
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "python"}}]
    doc = {"distributedInfo": {"rank": 0, "world_size": 1, "backend": "nccl"},
           "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "baseTimeNanoseconds": 1700000000000000000,
           "traceEvents": ev}
    text = json.dumps(doc)
    put("kineto", "small.json", text)
    put("kineto", "small.json.gz", gzip_bytes(text.encode()))


def gzip_bytes(data):
    import gzip
    import io
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
        f.write(data)
    return buf.getvalue()


def safetensors_file(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)], laid out in order."""
    hdr, off, data = {}, 0, b""
    if metadata:
        hdr["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    text = json.dumps(hdr, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors():
    f32 = struct.pack("<6f", *[0.5 * i - 1 for i in range(6)])
    f16 = struct.pack("<4e", 0.0, 0.25, -1.5, 2.0)
    bf16 = struct.pack("<3H", 0x3F80, 0xBF00, 0x4040)  # 1, -0.5, 3
    put("safetensors", "three_dtypes.safetensors", safetensors_file(
        [("w.f32", "F32", [2, 3], f32), ("w.f16", "F16", [4], f16), ("w.bf16", "BF16", [3], bf16)],
        {"format": "pt"}))
    put("safetensors", "ints_and_empty.safetensors", safetensors_file(
        [("i", "I64", [2], struct.pack("<2q", 1, -1)), ("e", "F32", [0, 4], b"")]))


def hf_config():
    put("hf_config", "gpt2.json", json.dumps({
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 64,
        "n_positions": 16, "n_embd": 32, "n_layer": 2, "n_head": 2, "n_inner": None,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": True}, indent=2).encode())
    put("hf_config", "llama.json", json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 256,
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_act": "silu",
        "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "rope_scaling": None, "attention_bias": False, "tie_word_embeddings": False}, indent=2).encode())


if __name__ == "__main__":
    token_shards()
    llmc_checkpoints()
    checkpoints()
    bench_json()
    kineto()
    safetensors()
    hf_config()
