#!/usr/bin/env python3
"""Reference figures from the peer HolisticTraceAnalysis 0.5.0 on the four real GPU
traces in tests/profiler/data/kineto: temporal breakdown, computation-communication
overlap (full precision), kernel-type breakdown and top kernels per rank. The
figures in tests/profiler/kineto_import_test.cpp come from this script. Not part of
the build or the tests: the suite never needs the peer.

Set-up (PyPI; HTA 0.5.0 imports psutil without declaring it):
  python3 -m venv --system-site-packages /tmp/hta-venv
  /tmp/hta-venv/bin/pip install HolisticTraceAnalysis==0.5.0 psutil
  mkdir -p /tmp/hta-work/{trace_filter_sampled,nccl_parser_config_nccl_data,ns_resolution_rank-0}
  # HTA reads a directory per job; rank from distributedInfo.rank:
  cp tests/profiler/data/kineto/trace_filter_sampled_rank-0.json.gz /tmp/hta-work/trace_filter_sampled/rank-0.json.gz
  cp tests/profiler/data/kineto/trace_filter_sampled_rank-1.json.gz /tmp/hta-work/trace_filter_sampled/rank-1.json.gz
  cp tests/profiler/data/kineto/nccl_parser_config_nccl_data.json.gz /tmp/hta-work/nccl_parser_config_nccl_data/rank-0.json.gz
  cp tests/profiler/data/kineto/ns_resolution_rank-0.json.gz /tmp/hta-work/ns_resolution_rank-0/rank-0.json.gz
Run:
  /tmp/hta-venv/bin/python scripts/hta-reference.py > hta-figures.out
"""
import gzip
import inspect
import json
import logging
import sys
import warnings

import pandas as pd

warnings.simplefilter("default")
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

import hta  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.analyzers.breakdown_analysis import BreakdownAnalysis  # noqa: E402
from hta.configs.config import HtaConfig  # noqa: F401,E402
from hta.utils.utils import get_kernel_type, KernelType  # noqa: E402

pd.set_option("display.width", 250)
pd.set_option("display.max_columns", 50)
pd.set_option("display.max_colwidth", 110)
pd.set_option("display.float_format", lambda v: repr(float(v)))

GROUPS = ["trace_filter_sampled", "nccl_parser_config_nccl_data", "ns_resolution_rank-0"]
TOP5 = {}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def raw_gpu_event_count(path):
    with gzip.open(path, "rt") as fh:
        d = json.load(fh)
    evs = [e for e in d.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    steps = [e for e in d.get("traceEvents", []) if str(e.get("name", "")).startswith("ProfilerStep#")]
    return len(evs), len(steps)


print("pandas", pd.__version__)
import numpy  # noqa: E402
print("numpy", numpy.__version__)
print("TraceAnalysis.__init__ signature:", inspect.signature(TraceAnalysis.__init__))

for g in GROUPS:
    d = f"/tmp/hta-work/{g}"
    print("\n" + "=" * 100)
    print("GROUP", g, "dir", d)
    ta = TraceAnalysis(trace_dir=d)  # defaults (include_last_profiler_step=False)
    t = ta.t
    sym = t.symbol_table.get_sym_table()
    for rank, f in sorted(t.trace_files.items()):
        n_raw, n_steps = raw_gpu_event_count(f)
        df = t.traces[rank]
        gk = df[df["stream"].ne(-1)]
        print(f"rank {rank}: file {f}: raw GPU events (kernel/memcpy/memset) {n_raw}, "
              f"ProfilerStep# events {n_steps}, HTA kept GPU events (stream!=-1) {len(gk)}")

    print("\n--- get_temporal_breakdown(visualize=False) ---")
    tb = ta.get_temporal_breakdown(visualize=False)
    print(tb.to_string())
    for _, r in tb.iterrows():
        k = float(r["kernel_time(us)"])
        print(f"rank {int(r['rank'])} raw: idle_us={r['idle_time(us)']!r} compute_us={r['compute_time(us)']!r} "
              f"non_compute_us={r['non_compute_time(us)']!r} kernel_time_us={r['kernel_time(us)']!r} "
              f"idle%={100*float(r['idle_time(us)'])/k!r} compute%={100*float(r['compute_time(us)'])/k!r} "
              f"non_compute%={100*float(r['non_compute_time(us)'])/k!r}")

    print("\n--- get_comm_comp_overlap(visualize=False) ---")
    ov = ta.get_comm_comp_overlap(visualize=False)
    print(ov.to_string())
    # HTA returns only round(100*ratio, 2); re-run with its module-level round() made the identity
    import hta.analyzers.communication_analysis as _ca
    _ca.round = lambda x, n=None: x
    ov_raw = ta.get_comm_comp_overlap(visualize=False)
    del _ca.round
    for _, r in ov_raw.iterrows():
        print(f"rank {int(r['rank'])} raw overlap % = {float(r['comp_comm_overlap_pctg'])!r}")

    print("\n--- get_gpu_kernel_breakdown(visualize=False) [all ranks aggregated, as HTA prints] ---")
    ktype_df, kern_df = ta.get_gpu_kernel_breakdown(visualize=False)
    print(ktype_df.to_string())
    print("\n(kernel df, summarized by HTA defaults duration_ratio=0.8 num_kernels=10; names cut to 110 chars;"
          " NB for types with >10 distinct kernels HTA re-aggregates, so max/min/mean/std there are over per-name sums)")
    for _, r in kern_df.iterrows():
        print(f"  rank {int(r['rank'])} {r['kernel_type']:<13} sum_us={float(r['sum (us)'])!r:<12} {str(r['name'])[:110]}")

    print("\n--- per-rank kernel-type breakdown (HTA's own BreakdownAnalysis._get_gpu_kernel_type_time, same types as default call) ---")
    types = [KernelType.COMPUTATION.name, KernelType.COMMUNICATION.name, KernelType.MEMORY.name]
    for rank in sorted(t.traces):
        df = t.traces[rank]
        gk = df[df["stream"].ne(-1)].copy()
        gk["kernel_type"] = gk["name"].apply(lambda x: get_kernel_type(sym[x]))
        kt = BreakdownAnalysis._get_gpu_kernel_type_time(gk, types)
        kt = kt.groupby(by=["kernel_type"])["sum"].agg(["sum"]).reset_index()
        kt = kt.sort_values(by=["sum"], ascending=False, ignore_index=True)
        kt["percentage"] = kt["sum"] / kt["sum"].sum() * 100
        print(f"rank {rank}:")
        print(kt.to_string())

    print("\n--- per-rank top 5 kernels by total time (from HTA's summarized kernel df, excluding 'others') ---")
    for rank in sorted(t.traces):
        sub = kern_df[(kern_df["rank"] == rank) & (kern_df["name"] != "others")]
        sub = sub.sort_values("sum (us)", ascending=False).head(5)
        print(f"rank {rank}:")
        for _, r in sub.iterrows():
            print(f"  {r['kernel_type']:<13} sum_us={float(r['sum (us)'])!r:<12} {str(r['name'])[:110]}")

    print("\n--- cross-check: per-rank top 5 kernels by total dur from HTA's parsed (filtered) trace, unsummarized ---")
    for rank in sorted(t.traces):
        df = t.traces[rank]
        gk = df[df["stream"].ne(-1)].copy()
        gk["sname"] = gk["name"].apply(lambda x: sym[x])
        gk["kernel_type"] = gk["sname"].apply(get_kernel_type)
        agg = gk.groupby(["sname", "kernel_type"])["dur"].agg(["sum", "count"]).reset_index()
        agg = agg.sort_values("sum", ascending=False).head(5)
        print(f"rank {rank}:")
        for _, r in agg.iterrows():
            print(f"  {r['kernel_type']:<13} sum_us={float(r['sum'])!r:<12} n={int(r['count']):<5} {str(r['sname'])[:110]}")
        TOP5[(g, rank)] = [(str(r['sname']), r['kernel_type'], float(r['sum']), int(r['count'])) for _, r in agg.iterrows()]

print("\n" + "=" * 100)
print("FULL KERNEL NAMES OF TOP 5 (unsummarized cross-check)")
for (g, rank), rows in TOP5.items():
    print(f"{g} rank {rank}:")
    for i, (n, kt, su, c) in enumerate(rows, 1):
        print(f"  {i}. [{kt}] sum_us={su!r} n={c} :: {n}")

print("\n" + "=" * 100)
print("APPENDIX: same temporal breakdown / overlap with include_last_profiler_step=True (non-default)")
import hta.analyzers.communication_analysis as _ca2  # noqa: E402
for g in GROUPS:
    ta = TraceAnalysis(trace_dir=f"/tmp/hta-work/{g}", include_last_profiler_step=True)
    tb = ta.get_temporal_breakdown(visualize=False)
    _ca2.round = lambda x, n=None: x
    ov = ta.get_comm_comp_overlap(visualize=False)
    del _ca2.round
    for (_, r), (_, o) in zip(tb.iterrows(), ov.iterrows()):
        k = float(r["kernel_time(us)"])
        n_kept = int(ta.t.traces[int(r["rank"])]["stream"].ne(-1).sum())
        print(f"{g} rank {int(r['rank'])}: kept_gpu_events={n_kept} idle_us={float(r['idle_time(us)'])!r} "
              f"compute_us={float(r['compute_time(us)'])!r} non_compute_us={float(r['non_compute_time(us)'])!r} "
              f"span_us={k!r} idle%={100*float(r['idle_time(us)'])/k!r} compute%={100*float(r['compute_time(us)'])/k!r} "
              f"non_compute%={100*float(r['non_compute_time(us)'])/k!r} overlap%={float(o['comp_comm_overlap_pctg'])!r}")
